#!/usr/bin/env bash
# rdma_guest_smoke: rdma_probe (devices, port state, IPv4 RoCEv2 GIDs, an RC QP exchange between
# rxe0 and rxe1 with every byte checked) inside the soft-RoCE guest of run_in_vm.sh.
# When this host cannot run that guest (run_in_vm.sh exits 126: not root while packages are
# missing, apt-get or the archive unavailable, QEMU cannot start, ...) it prints SKIP and exits 77,
# unless CI is set: in CI a guest that cannot be set up is a failure.
# Usage: guest_smoke.sh RDMA_PROBE
set -u
"$(dirname "$0")/run_in_vm.sh" --timeout 300 -- "$1"
rc=$?
if [ "$rc" -eq 126 ]; then
  if [ -n "${CI:-}" ]; then
    echo "rdma_guest_smoke: FAIL: the soft-RoCE guest could not be set up (see above); CI is set, so no skip"
    exit 1
  fi
  echo "************ SKIP rdma_guest_smoke: this host cannot run the soft-RoCE guest (see above) ************"
  exit 77
fi
[ "$rc" -ne 77 ] || rc=1   # 77 means SKIP to ctest
exit "$rc"
