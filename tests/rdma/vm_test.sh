#!/usr/bin/env bash
# A ctest test inside the soft-RoCE guest: run_in_vm.sh with the given arguments, its exit code
# passed on. When this host cannot run that guest (run_in_vm.sh exits 126: not root while
# packages are missing, apt-get or the archive unavailable, QEMU cannot start, ...) it prints SKIP
# and exits 77, unless CI is set: in CI a guest that cannot be set up is a failure.
# Usage: vm_test.sh NAME RUN_IN_VM_ARGUMENTS...
set -u
name=$1
shift
"$(dirname "$0")/run_in_vm.sh" "$@"
rc=$?
if [ "$rc" -eq 126 ]; then
  if [ -n "${CI:-}" ]; then
    echo "$name: FAIL: the soft-RoCE guest could not be set up (see above); CI is set, so no skip"
    exit 1
  fi
  echo "************ SKIP $name: this host cannot run the soft-RoCE guest (see above) ************"
  exit 77
fi
[ "$rc" -ne 77 ] || rc=1   # 77 means SKIP to ctest
exit "$rc"
