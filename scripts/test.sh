#!/usr/bin/env bash
# The whole test suite: sets everything up (scripts/setup.sh), then runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd build
ctest --output-on-failure --timeout 600 "$@"
