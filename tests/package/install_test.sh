#!/usr/bin/env bash
# The installed hcomm, used from outside its tree: `cmake --install` into a temporary prefix,
# then an out-of-tree CMake project (find_package(hcomm), shared and static) and a C program
# compiled with `cc $(pkg-config --cflags --libs hcomm)` are built against that prefix alone and
# run as 3 ranks by the prefix's hcomm-run, their results checked.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=${1:?usage: install_test.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: install_test.sh BUILD_DIR SOURCE_DIR}
name=package_install
source "$src/tests/skip.sh"
require_tools cc pkg-config ldd
work=$(mktemp -d /tmp/hcomm-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

step() { echo "install_test: $*"; }
fail() { echo "install_test: FAIL: $*"; exit 1; }

step "cmake --install into $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log" || { cat "$work/install.log"; fail "install"; }
for f in include/hcomm/hcomm.h include/hcomm/hcomm.hpp include/hcomm/version.h lib/libhcomm.so \
         lib/libhcomm.so.0 lib/libhcomm.a lib/cmake/hcomm/hcommConfig.cmake lib/pkgconfig/hcomm.pc \
         bin/hcomm-run bin/hcomm-bench bin/hcomm-info bin/hcomm-chaos bin/hcomm-perf-mon \
         bin/hcomm_perf_mon bin/hcomm-visualize bin/hcomm-diagnose share/hcomm/tools/hcomm_traces.py; do
  [ -e "$prefix/$f" ] || fail "the prefix lacks $f"
done
step "the installed trace tools run from the prefix"
"$prefix/bin/hcomm-diagnose" --help > /dev/null || fail "hcomm-diagnose --help"
"$prefix/bin/hcomm-visualize" --help > /dev/null || fail "hcomm-visualize --help"
"$prefix/bin/hcomm_perf_mon" --help > /dev/null || fail "hcomm_perf_mon --help"

step "out-of-tree CMake project: find_package(hcomm CONFIG COMPONENTS static)"
cp -r "$src/tests/package/consumer" "$work/consumer"
cmake -S "$work/consumer" -B "$work/consumer-build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure"; }
cmake --build "$work/consumer-build" -j2 > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build"; }

step "C program: cc \$(pkg-config --cflags --libs hcomm)"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
flags=$(pkg-config --cflags --libs hcomm)
case "$flags" in *"$src"* | *"$build"*) fail "pkg-config points into the source or build tree: $flags" ;; esac
# shellcheck disable=SC2086
cc -std=c99 -Wall -Wextra -Werror "$prefix/share/doc/hcomm/examples/c/allreduce.c" $flags \
  -o "$work/c_allreduce" || fail "compiling the C example"

export LD_LIBRARY_PATH=$prefix/lib
# ldd's output is captured before grep reads it: under pipefail, `ldd | grep -q` fails at random
# when grep exits at its first match and ldd dies of SIGPIPE writing the rest.
for prog in consumer-build/consumer_shared c_allreduce; do
  libs=$(ldd "$work/$prog")
  grep -q "$prefix/lib/libhcomm.so.0" <<<"$libs" || { echo "$libs"; fail "$prog does not load the prefix's libhcomm.so.0"; }
done
libs=$(ldd "$work/consumer-build/consumer_static")
if grep -q libhcomm <<<"$libs"; then fail "consumer_static loads libhcomm.so"; fi

run() {
  local prog=$1 expect=$2
  local out
  out=$("$prefix/bin/hcomm-run" -n 3 --timeout 120 "$work/$prog" 2>&1) || { echo "$out"; fail "$prog on 3 ranks"; }
  echo "$out" | sed 's/^/  /'
  grep -q "$expect" <<<"$out" || fail "$prog did not print '$expect'"
}
run consumer-build/consumer_shared "consumer: VERIFIED on 3 ranks"
run consumer-build/consumer_static "consumer: VERIFIED on 3 ranks"
run c_allreduce "on 3 ranks (hcomm .*): VERIFIED (0 wrong)"
# The Python package, when the build made it: from the prefix's site directory, outside the tree.
site=$(ls -d "$prefix"/lib/python3*/dist-packages 2>/dev/null | head -1)
if [ -n "$site" ] && [ -e "$site/hcomm/__init__.py" ]; then
  out=$(cd "$work" && env -u PYTHONPATH PYTHONPATH="$site" "$prefix/bin/hcomm-run" -n 3 --timeout 120 \
    /usr/bin/python3 -c 'import numpy as np, hcomm
x = np.full(5, hcomm.get_rank() + 1.0)
hcomm.all_reduce(x)
assert (x == 6).all() and hcomm.__file__.startswith("'"$site"'"), (x, hcomm.__file__)
print("python from the prefix: VERIFIED")' 2>&1) || { echo "$out"; fail "the installed Python package"; }
  grep -q "python from the prefix: VERIFIED" <<<"$out" || { echo "$out"; fail "the installed Python package"; }
  step "the installed Python package ran an all_reduce on 3 ranks"
fi
step "PASS: the installed prefix alone builds and runs C++ (shared, static) and C programs"
