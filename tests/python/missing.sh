#!/usr/bin/env bash
# The Python package was not built (CMake found no pybind11 for HCOMM_PYTHON).
# With "torch": the torch.distributed backend was not built (no libtorch-dev / python3-torch).
# shellcheck source=../skip.sh
. "$(dirname "$0")/../skip.sh"
if [ "${1:-}" = torch ]; then
  name=python_torch_backend
  skip "the torch backend (python3-torch and libtorch-dev)" \
    "run scripts/setup.sh, which installs them, then reconfigure"
fi
name=python_package
skip "the Python package (pybind11-dev and python3-dev for /usr/bin/python3)" \
  "run scripts/setup.sh, which installs them, then reconfigure"
