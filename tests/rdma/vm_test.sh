#!/usr/bin/env bash
# A ctest test inside the soft-RoCE guest: run_in_vm.sh with the given arguments, its exit code
# passed on. When this host cannot run that guest (run_in_vm.sh exits 126: not root while
# packages are missing, apt-get or the archive unavailable, QEMU cannot start, ...) the test is
# skipped (77), or fails when CI is set: in CI a guest that cannot be set up is a failure
# (tests/skip.sh).
# Usage: vm_test.sh NAME RUN_IN_VM_ARGUMENTS...
set -u
name=$1
shift
# shellcheck source=../skip.sh
. "$(dirname "$0")/../skip.sh"
if without rdma-guest; then
  rc=126
  echo "$name: HCOMM_TEST_WITHOUT names rdma-guest: the guest is not started"
else
  "$(dirname "$0")/run_in_vm.sh" "$@"
  rc=$?
fi
if [ "$rc" -eq 126 ]; then
  skip "the soft-RoCE guest (see the messages above)" "run it as root on a host with \
qemu-system-x86 (or apt-get) and Debian's archive reachable; tests/rdma/run_in_vm.sh says more"
fi
[ "$rc" -ne 77 ] || rc=1   # 77 means SKIP to ctest
exit "$rc"
