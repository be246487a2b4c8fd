#!/usr/bin/env bash
# rdma_tests: in_guest.sh inside the soft-RoCE guest of run_in_vm.sh (the collective matrix over
# RDMA between rxe0 and rxe1, the registration cache, the unaligned fallback, the no-device and
# ulimit errors, hcomm-bench's cache hit rate). Skips (77) where QEMU cannot run, except in CI.
# Usage: rdma_tests.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
"$here/run_in_vm.sh" --timeout 1500 --mem 1536 \
  --copy "$here/in_guest.sh" --copy "$build/tools/hcomm-run" --copy "$build/tools/hcomm-bench" \
  --copy "$build/tools/hcomm-info" --copy "$build/tests/rdma/rdma_checks" \
  --copy "$build/tests/integration/collective_matrix" \
  -- "$here/in_guest.sh" "$build"
rc=$?
if [ "$rc" -eq 126 ]; then
  if [ -n "${CI:-}" ]; then
    echo "rdma_tests: FAIL: the soft-RoCE guest could not be set up (see above); CI is set, so no skip"
    exit 1
  fi
  echo "************ SKIP rdma_tests: this host cannot run the soft-RoCE guest (see above) ************"
  exit 77
fi
[ "$rc" -ne 77 ] || rc=1
exit "$rc"
