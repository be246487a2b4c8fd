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
# Two parts, the second run even when the first failed:
# 1. the RDMA tests first and with their output, so that the log shows what ran inside the
#    soft-RoCE guest (devices, links, the matrix over rdma);
# 2. everything else (the unit cases two at a time: each is a process of its own).
# The sanitizer runs (sanitize_asan: unit + integration tests under ASan + UBSan, ~21 min here;
# sanitize_tsan: unit tests under TSan, ~6 min) are left out: with them CI took 47 min on 2
# cores, past its 45. `ctest -L sanitize` in build/ runs them (README "Sanitizers").
status=0
ctest -V --timeout 600 -R '^rdma_' || status=1
ctest --output-on-failure --timeout 600 -j2 -L '^unit$' || status=1
ctest --output-on-failure --timeout 600 -E '^(rdma|sanitize)_' -LE '^unit$' || status=1
exit "$status"
