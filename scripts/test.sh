#!/usr/bin/env bash
# The whole test suite: sets everything up (scripts/setup.sh), then runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd build
if [ $# -gt 0 ]; then
  exec ctest --output-on-failure --timeout 600 "$@"
fi
# The RDMA tests first and with their output, so that the log shows what ran inside the
# soft-RoCE guest (devices, links, the matrix over rdma); then everything else.
ctest -V --timeout 600 -R '^rdma_'
ctest --output-on-failure --timeout 600 -E '^rdma_'

