#!/usr/bin/env bash
# chaos_rdma: RoCE traffic cut and restored between two soft-RoCE devices, inside the QEMU guest
# of run_in_vm.sh (rxe0 on veth0 198.18.0.1, rxe1 on veth1 198.18.0.2, both in the guest's root
# namespace, nft available). The communicator must move its traffic from rdma to its TCP
# fallback, lose and duplicate nothing, and move back to rdma once RoCE works again.
#
# 2 ranks, HCOMM_TRANSPORT=rdma (they share the guest, which would otherwise pick shm), rank r
# on rxe<r>; the TCP links (fallback) go over the loopback address of hcomm-run's rendezvous,
# which the fault does not touch.
# 1. A fault-free run of hcomm-chaos (64 KiB allreduce, random data, ring) prints the digest of
#    its 600 results.
# 2. The same 600 iterations 20 ms apart (~25 s under TCG), while rank 0 drops every RoCEv2 packet
#    (UDP port 4791) on input with nftables from 3 s to 8 s. hcomm-chaos asserts: the digest
#    equals the fault-free one, >= 1 failover and >= 1 failback (both ranks together), every
#    fault detected, no operation longer than 30 s (no hang), and traffic on rdma at the end.
#    Its report (printed whole) shows the traffic moving rdma -> tcp-fallback -> rdma.
# Timing: QEMU emulates the CPU here (TCG, ~100x slower than the host: a 64 KiB allreduce takes
# ~15 ms, the nft command ~1.5 s, which the detection times include), so
# HCOMM_KEEPALIVE_TIMEOUT_MS=2000 (heartbeats every 400 ms) keeps the fault-free run free of
# spurious failovers on a starved guest; the library then gives a reconnection attempt up to
# 6 s (3 x the keep-alive timeout), hence the run's length: after the 8 s restore, the RDMA link
# must reconnect and carry heartbeats for HCOMM_FAILBACK_MS before the traffic moves back.
# Usage (in the guest): chaos_rdma.sh DIR, DIR holding hcomm-run and hcomm-chaos.
# Exit status: 0 when every check passed; it prints what it does.
set -u
dir=$1
run="$dir/hcomm-run" chaos="$dir/hcomm-chaos"
name=chaos_rdma
fail() { echo "$name: FAIL: $*"; exit 1; }
[ -x "$run" ] && [ -x "$chaos" ] || fail "no hcomm-run and hcomm-chaos in $dir"
command -v nft > /dev/null || fail "nft is not installed in the guest"
work=$(mktemp -d)
cleanup() {
  nft delete table inet chaos 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/drop-roce.sh" << 'EOF'
nft add table inet chaos && nft add chain inet chaos in '{ type filter hook input priority 0; }' &&
nft add rule inet chaos in udp dport 4791 drop
EOF
per_rank_device='export HCOMM_RDMA_DEVICE=rxe$HCOMM_RANK; exec "$0" "$@"'
export HCOMM_TRANSPORT=rdma HCOMM_KEEPALIVE_MS=400 HCOMM_KEEPALIVE_TIMEOUT_MS=2000
workload=(-b 64K -n 600 -d random -a ring)

echo "$name: 1. fault-free run over rdma (rxe0 <-> rxe1)"
"$run" -n 2 --timeout 300 bash -c "$per_rank_device" "$chaos" "${workload[@]}" \
  > "$work/clean.log" 2>&1
rc=$?
cat "$work/clean.log"
[ "$rc" -eq 0 ] || fail "the fault-free run failed (exit $rc)"
grep -q '^\[0\] rank 0: traffic at start: rank 1 on rdma$' "$work/clean.log" \
  || fail "rank 0's traffic did not start on rdma"
digest=$(sed -n 's/^\[0\] # digest: \([0-9a-f]\{16\}\).*/\1/p' "$work/clean.log")
[ -n "$digest" ] || fail "no digest in the fault-free run's output"
echo "$name: digest $digest"

echo
echo "$name: 2. RoCE (udp dport 4791) dropped on input from 3 s to 8 s"
"$run" -n 2 --timeout 400 bash -c "$per_rank_device" "$chaos" "${workload[@]}" -i 20 \
  --expect-digest "$digest" \
  --fault "at=3,do=cmd:sh $work/drop-roce.sh,for=5,undo=nft delete table inet chaos" \
  --expect-failovers 1 --expect-failbacks 1 --expect-detection --max-op-ms 30000 \
  --expect-final-transport rdma > "$work/cut.log" 2>&1
rc=$?
cat "$work/cut.log"
[ "$rc" -eq 0 ] || fail "hcomm-chaos reported a failure (exit $rc): see above"
for r in 0 1; do
  grep -q "^\[$r\] rank $r: traffic to rank $((1 - r)) now on tcp-fallback (was rdma)" "$work/cut.log" \
    || fail "rank $r did not report its traffic moving to tcp-fallback"
  grep -q "^\[$r\] rank $r: traffic to rank $((1 - r)) now on rdma (was tcp-fallback)" "$work/cut.log" \
    || fail "rank $r did not report its traffic moving back to rdma"
done
if nft list tables | grep -q chaos; then fail "the nftables table is still there"; fi
echo "$name: ok"
