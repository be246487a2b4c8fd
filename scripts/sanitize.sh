#!/usr/bin/env bash
# The sanitizer runs (README "Tests"): an AddressSanitizer + UndefinedBehaviorSanitizer build
# (build-asan) runs the unit and integration tests; a ThreadSanitizer build (build-tsan) runs the
# unit tests. The first report fails the test it happened in. Python and the torch backend are
# not part of these builds.
# Usage: scripts/sanitize.sh [asan] [tsan]     (default: both; scripts/setup.sh must have run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
werror=${HCOMM_WERROR:-$([ -n "${CI:-}" ] && echo ON || echo OFF)}
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(asan tsan)

configure() {  # DIR SANITIZERS
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DHCOMM_SANITIZE="$2" -DHCOMM_BUILD_PYTHON=OFF \
    -DHCOMM_WERROR="$werror" >/dev/null
}

for run in "${runs[@]}"; do
  case $run in
    asan)
      configure build-asan address,undefined
      cmake --build build-asan -j2
      # Leaks are checked too: memory hcomm allocated and never freed fails the process at exit.
      # Two cases test the unmap monitor against glibc's allocator itself (its chunk header, and
      # free() of a mapped chunk munmap()ing it); ASan's allocator has neither (it keeps freed
      # memory in quarantine), so they run in the normal build only.
      ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=0 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/sanitizers/ubsan.supp \
        LSAN_OPTIONS=suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0 \
        ctest --test-dir build-asan --output-on-failure --timeout 900 -L '^(unit|integration)$' \
        -E 'unit/mr_cache(: a range the monitor cannot watch| \+ unmap monitor: free\(\) of an 8 MiB)'
      ;;
    tsan)
      configure build-tsan thread
      cmake --build build-tsan -j2 --target hcomm-unit-tests
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/sanitizers/tsan.supp \
        ctest --test-dir build-tsan --output-on-failure --timeout 900 -L '^unit$'
      ;;
    *)
      echo "usage: scripts/sanitize.sh [asan] [tsan]" >&2
      exit 2
      ;;
  esac
done
