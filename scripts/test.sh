#!/usr/bin/env bash
# The whole test suite: sets everything up (scripts/setup.sh), then runs every test with ctest.
# With arguments, runs ctest in build/ with them instead (e.g. -R '^unit/', -L heavy).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd build
if [ $# -gt 0 ]; then
  exec ctest --output-on-failure --timeout 600 "$@"
fi
# Three parts, each run even when one before it failed:
# 1. the RDMA tests first and with their output, so that the log shows what ran inside the
#    soft-RoCE guest (devices, links, the matrix over rdma);
# 2. everything else but the integration tests, which run in part 3 only (the unit cases two at
#    a time: each is a process of its own);
# 3. the unit and integration tests under AddressSanitizer + UBSan, with the run's output
#    (sanitize_asan: scripts/sanitize.sh asan). sanitize_tsan (the unit tests under
#    ThreadSanitizer, ~6 min) is not part of it: it would take CI past 45 minutes on 2 cores;
#    `ctest -L sanitize` in build/ runs both.
status=0
ctest -V --timeout 600 -R '^rdma_' || status=1
ctest --output-on-failure --timeout 600 -j2 -L '^unit$' || status=1
ctest --output-on-failure --timeout 600 -E '^(rdma|sanitize)_' -LE '^(unit|integration)$' ||
  status=1
ctest -V --timeout 2400 -R '^sanitize_asan$' || status=1
exit "$status"
