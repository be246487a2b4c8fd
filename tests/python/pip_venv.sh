#!/usr/bin/env bash
# `pip install` of the package into a fresh virtual environment, offline, with Debian's
# setuptools, pybind11 and numpy (--system-site-packages, --no-build-isolation, --no-index);
# then, from outside the source tree, `import hcomm` and a 2-rank all_reduce checked.
# Usage: pip_venv.sh PYTHON PACKAGE_DIR BUILD_DIR HCOMM_RUN
set -eu
python=$1 package=$2 build=$3 run=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$python" -m venv --system-site-packages "$dir/venv"
cp -r "$package" "$dir/src"  # pip builds in the tree it is given: keep the repository clean
HCOMM_BUILD_DIR=$build HCOMM_SOURCE_DIR=$(dirname "$package") "$dir/venv/bin/pip" install -q --no-build-isolation --no-index "$dir/src" \
  > "$dir/pip.log" 2>&1 || { cat "$dir/pip.log"; exit 1; }
cd "$dir"
"$dir/venv/bin/python" -c 'import hcomm, sys; print("installed at", hcomm.__file__); sys.exit(0 if "venv" in hcomm.__file__ else 1)'
"$run" -n 2 --timeout 60 "$dir/venv/bin/python" -c '
import numpy as np, hcomm
x = np.full(1000, hcomm.get_rank() + 1.0, dtype=np.float32)
hcomm.all_reduce(x)
assert (x == 3.0).all(), x[:4]
print("rank", hcomm.get_rank(), "all_reduce from the venv: OK")
'
