#!/usr/bin/env bash
# The sanitizer runs (README "Tests"): an AddressSanitizer + UndefinedBehaviorSanitizer build
# (build-asan) runs the unit and integration tests; a ThreadSanitizer build (build-tsan) runs the
# unit tests. The first report fails the test it happened in. Python and the torch backend are
# not part of these builds. HCOMM_TEST_TIME_SCALE tells the tests whose jobs have deadlines of
# their own how much slower the sanitizer makes them.
# Usage: scripts/sanitize.sh [asan] [tsan]     (default: both; scripts/setup.sh must have run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
werror=${HCOMM_WERROR:-$([ -n "${CI:-}" ] && echo ON || echo OFF)}
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(asan tsan)

# Both builds use Debian's clang, which compiles them 2-3x faster than GCC (README "Sanitizers").
configure() {  # DIR SANITIZERS
  if [ -f "$1/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' "$1/CMakeCache.txt"; then
    rm -rf "$1"  # made by another compiler: CMake cannot switch an existing build
  fi
  CC=clang CXX=clang++ cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DHCOMM_SANITIZE="$2" \
    -DHCOMM_BUILD_PYTHON=OFF -DHCOMM_WERROR="$werror" >/dev/null
}

# Two unit cases test the unmap monitor against glibc's allocator itself (its chunk header, and
# free() of a mapped chunk munmap()ing it); the sanitizers' allocators have neither (ASan's keeps
# freed memory in quarantine), so they run in the normal build only.
glibc_allocator_cases='unit/mr_cache(: a range the monitor cannot watch| \+ unmap monitor: free\(\) of an 8 MiB)'
status=0
for run in "${runs[@]}"; do
  case $run in
    asan)
      configure build-asan address,undefined
      cmake --build build-asan -j2
      # Leaks are checked too: memory hcomm allocated and never freed fails the process at exit.
      # The unit cases are processes of their own and two run at a time (each mostly one busy
      # thread); the integration tests, whose ranks fill the cores, one at a time.
      export HCOMM_TEST_TIME_SCALE=3
      export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=0
      export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/sanitizers/ubsan.supp
      export LSAN_OPTIONS=suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0
      # hwloc's PCI discovery (its hwloc_pci plugin, through libpciaccess) leaks about 1 KB on
      # some machines, and hwloc unloads the plugin before the leak check, so the leak's frames
      # are "<unknown module>" and no suppression can name them. PCI locality is not what these
      # runs test: the plugin is left out (hwloc still sees cores, NUMA nodes and NICs).
      export HWLOC_COMPONENTS=-pci
      ctest --test-dir build-asan --output-on-failure --timeout 900 -j2 -L '^unit$' \
        -E "$glibc_allocator_cases" || status=1
      ctest --test-dir build-asan --output-on-failure --timeout 900 -L '^integration$' || status=1
      ;;
    tsan)
      configure build-tsan thread
      cmake --build build-tsan -j2 --target hcomm-unit-tests
      HCOMM_TEST_TIME_SCALE=5 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/sanitizers/tsan.supp \
        ctest --test-dir build-tsan --output-on-failure --timeout 900 -j2 -L '^unit$' \
        -E "$glibc_allocator_cases" || status=1
      ;;
    *)
      echo "usage: scripts/sanitize.sh [asan] [tsan]" >&2
      exit 2
      ;;
  esac
done
exit "$status"
