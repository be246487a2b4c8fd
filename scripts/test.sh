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
# Four parts, each run even when one before it failed:
# 1. the RDMA tests first and with their output, so that the log shows what ran inside the
#    soft-RoCE guest (devices, links, the matrix over rdma);
# 2. the unit cases, two at a time (each is a process of its own);
# 3. everything else but the integration tests;
# 4. the sanitizer runs, with their output (README "Sanitizers"): sanitize_asan runs the unit and
#    integration tests under ASan + UBSan (so the integration tests run there, not in part 3),
#    sanitize_tsan the unit tests under TSan.
status=0
ctest -V --timeout 600 -R '^rdma_' || status=1
ctest --output-on-failure --timeout 600 -j2 -L '^unit$' || status=1
ctest --output-on-failure --timeout 600 -E '^(rdma|sanitize)_' -LE '^(unit|integration)$' || status=1
ctest -V --timeout 2400 -R '^sanitize_' || status=1
exit "$status"
