#!/usr/bin/env bash
# The main demo: 4 local ranks allreduce 16 MiB of float32 over TCP, verify it and print the
# bandwidth. Sets everything up first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec build/tools/hcomm-run -n 4 --timeout 120 build/examples/example_allreduce "$@"
