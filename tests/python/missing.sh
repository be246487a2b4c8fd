#!/usr/bin/env bash
# The Python package was not built (CMake found no pybind11 for HCOMM_PYTHON).
name=python_package
# shellcheck source=../skip.sh
. "$(dirname "$0")/../skip.sh"
skip "the Python package (pybind11-dev and python3-dev for /usr/bin/python3)" \
  "run scripts/setup.sh, which installs them, then reconfigure"
