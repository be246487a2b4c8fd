#!/usr/bin/env bash
# chaos_fabric_cut: the fabric between two hosts is cut for 3 s and restored; the communicator
# must ride it out on the management network and come back, with bit-identical results.
#
# Two hosts (network namespaces, two_hosts.sh) with a fabric (10.78.0.0/24) and a management
# network (10.79.0.0/24); one rank per host, primary links on the fabric (HCOMM_SOCKET_IFNAME),
# fallback links on the management network (HCOMM_FALLBACK_IFNAME), the rendezvous there too.
# One rank per host because that is the case under test: every byte between the ranks crosses
# the fabric, and nothing else competes for this machine's 2 cores (two ranks per namespace would
# use shm between them, or with HCOMM_TRANSPORT=tcp add traffic the cut does not touch).
#
# 1. A fault-free run of hcomm-chaos (random data, ring forced so both runs reduce alike)
#    prints the digest of all 2000 results.
# 2. The same run, 5 ms apart (~11 s), while rank 0 adds at 2 s an nftables table in host A that
#    drops everything in and out of its fabric interface, and deletes it at 5 s. hcomm-chaos
#    asserts: the digest equals the fault-free one (lossless, exactly-once), >= 1 failover and
#    >= 1 failback (all ranks), each rank detected the cut within 900 ms (HCOMM_KEEPALIVE_TIMEOUT_MS
#    800 + 100: the margin covers the keep-alive's check period and the ~5-20 ms the nft command
#    takes after the scheduled time; measured 800-845 ms here), no operation took over 10 s (no
#    hang), and traffic to the peer is back on "tcp" (the primary) at the end.
# 3. The script checks that the management interface carried the traffic during the cut (> 1 MB
#    sent on it in host A, against ~heartbeats in the fault-free run), that each rank printed its
#    move to tcp-fallback and back, and that the nftables table is gone.
# Needs root, ip netns, nsenter, unshare, nft; otherwise skipped (77), or failed under CI
# (tests/skip.sh). ~20 s.
#
# With CHAOS_COMPRESSION=CODEC both runs compress their frames with CODEC (hcomm-chaos
# --compression; chaos_fabric_cut_fp16): replayed compressed frames must give the same digest.
#
# Usage: chaos_fabric_cut.sh HCOMM_RUN HCOMM_CHAOS
set -u
run=$1 chaos=$2
here=$(cd "$(dirname "$0")" && pwd)
name=chaos_fabric_cut

fail() { echo "$name: FAIL: $*" >&2; exit 1; }
# shellcheck source=two_hosts.sh
. "$here/two_hosts.sh"

two_hosts_start "cut$$"
workload=(-b 64K -n 2000 -d random -a ring)
if [ -n "${CHAOS_COMPRESSION:-}" ]; then
  workload+=(--compression "$CHAOS_COMPRESSION")
  name="$name ($CHAOS_COMPRESSION)"
fi

# chaos RUN_TIMEOUT LOG ARGS...: hcomm-chaos on both hosts, bounded.
chaos() {
  local limit=$1 log=$2
  shift 2
  timeout $((limit + 10)) "$run" -n 2 --timeout "$limit" "$dir/rank.sh" "$chaos" "$@" > "$log" 2>&1
}

echo "$name: 1. fault-free run"
mgmt0=$(tx_bytes "$ns_a" mgmt)
chaos 60 "$dir/clean.log" "${workload[@]}" || { cat "$dir/clean.log"; fail "the fault-free run failed"; }
mgmt_clean=$(( $(tx_bytes "$ns_a" mgmt) - mgmt0 ))
digest=$(chaos_digest "$dir/clean.log") || exit 1
echo "  digest $digest; $mgmt_clean bytes sent on host A's management interface"

echo "$name: 2. the fabric of host A dropped from 2 s to 5 s (nftables)"
mgmt0=$(tx_bytes "$ns_a" mgmt)
chaos 60 "$dir/cut.log" "${workload[@]}" -i 5 --expect-digest "$digest" \
  --fault "at=2,do=cmd:nft -f $dir/drop-fabric.nft,for=3,undo=nft delete table inet chaos" \
  --expect-failovers 1 --expect-failbacks 1 --expect-detection --max-detect-ms 900 \
  --max-op-ms 10000 --expect-final-transport tcp
rc=$?
mgmt_cut=$(( $(tx_bytes "$ns_a" mgmt) - mgmt0 ))
cat "$dir/cut.log"
[ "$rc" -eq 0 ] || fail "hcomm-chaos reported a failure (exit $rc): see above"

echo "$name: 3. where the traffic went"
echo "  $mgmt_cut bytes sent on host A's management interface during the faulty run"
[ "$mgmt_cut" -gt 1000000 ] \
  || fail "only $mgmt_cut bytes went over the management network: the fallback did not carry the traffic"
for r in 0 1; do
  grep -qE "^\[$r\] rank $r: traffic to rank $((1 - r)) now on tcp-fallback \(was tcp\)" "$dir/cut.log" \
    || fail "rank $r never reported its traffic moving to tcp-fallback"
  grep -qE "^\[$r\] rank $r: traffic to rank $((1 - r)) now on tcp \(was tcp-fallback\)" "$dir/cut.log" \
    || fail "rank $r never reported its traffic moving back to tcp"
done
if ip netns exec "$ns_a" nft list tables | grep -q chaos; then fail "the nftables table is still there"; fi
echo "$name: ok"
