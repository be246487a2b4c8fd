#!/usr/bin/env bash
# chaos_multipath: two networks between two hosts carry a peer's large frames together, split by
# their measured bandwidths, exactly once; when one of them is cut the run goes on over the
# other, with bit-identical results.
#
# The two hosts of chaos_fabric_cut (two_hosts.sh), both networks shaped to 1 Gbit/s each way
# (tbf on both ends' egress), one rank each. HCOMM_SOCKET_IFNAME=fabric,mgmt and no
# HCOMM_FALLBACK_IFNAME: the primary links on the fabric, the fallback on the management network,
# and HCOMM_MULTIPATH's default (auto) splits large frames between them. The workload: 64 MiB
# allreduces (random data, ring forced, every result compared element by element and digested).
# 1. A fault-free run: its digest; host A sent at least 30% of the bytes on each network (equal
#    links get about half each).
# 2. The same with HCOMM_MULTIPATH=off: the same digest, and the management network carried
#    less than 5% (heartbeats): the split of 1 is multi-path's doing.
# 3. The management network cut (nftables, both ways) from 2 s to 5 s, then the fabric from 2 s
#    to 5 s: the same digest each time (hcomm-chaos --expect-digest), no operation over 20 s, the
#    cut seen (a link_down or a failover event), the cut network's link made again.
# The speed of the split is bench/multipath.sh's measurement (README "Failover"). Needs root,
# ip netns, nsenter, unshare, nft, tc; otherwise skipped (77), or failed under CI
# (tests/skip.sh). ~60 s.
#
# Usage: chaos_multipath.sh HCOMM_RUN HCOMM_CHAOS
set -u
run=$1 chaos=$2
here=$(cd "$(dirname "$0")" && pwd)
name=chaos_multipath

fail() { echo "$name: FAIL: $*" >&2; exit 1; }
# shellcheck source=two_hosts.sh
. "$here/two_hosts.sh"
require_tools tc awk

two_hosts_start "mp$$"
unset HCOMM_FALLBACK_IFNAME HCOMM_MULTIPATH
export HCOMM_SOCKET_IFNAME=fabric,mgmt
for ns in "$ns_a" "$ns_b"; do
  for iface in fabric mgmt; do
    ip netns exec "$ns" tc qdisc replace dev "$iface" root tbf rate 1gbit burst 256kb latency 20ms \
      || fail "tbf on $iface in $ns"
  done
done
cat > "$dir/drop-mgmt.nft" << 'EOF'
table inet chaosm {
  chain in { type filter hook input priority 0; iifname "mgmt" drop; }
  chain out { type filter hook output priority 0; oifname "mgmt" drop; }
}
EOF
workload=(-b 64M -n 12 -d random -a ring)

# chaos LOG ARGS...: hcomm-chaos on both hosts, bounded.
chaos() {
  local log=$1
  shift
  timeout 130 "$run" -n 2 --timeout 120 "$dir/rank.sh" "$chaos" "${workload[@]}" "$@" > "$log" 2>&1
}
# shares LOG FABRIC_BYTES MGMT_BYTES: prints and checks nothing; sets fabric_pct, mgmt_pct.
shares() {
  fabric_pct=$(awk -v f="$2" -v m="$3" 'BEGIN { printf "%d", 100 * f / (f + m) }')
  mgmt_pct=$((100 - fabric_pct))
  echo "  host A sent $2 bytes on the fabric ($fabric_pct%), $3 on the management network ($mgmt_pct%)"
}
# measured LOG ARGS...: a run with host A's bytes per network counted.
measured() {
  local log=$1
  shift
  local f0 m0
  f0=$(tx_bytes "$ns_a" fabric) m0=$(tx_bytes "$ns_a" mgmt)
  chaos "$log" "$@"
  local rc=$?
  shares "$log" $(($(tx_bytes "$ns_a" fabric) - f0)) $(($(tx_bytes "$ns_a" mgmt) - m0))
  return $rc
}

echo "$name: 1. fault-free, both networks"
measured "$dir/both.log" || { cat "$dir/both.log"; fail "the fault-free run failed"; }
digest=$(chaos_digest "$dir/both.log") || exit 1
echo "  digest $digest"
[ "$fabric_pct" -ge 30 ] && [ "$mgmt_pct" -ge 30 ] \
  || fail "the large frames were not split between the networks ($fabric_pct% / $mgmt_pct%)"

echo "$name: 2. fault-free, HCOMM_MULTIPATH=off"
HCOMM_MULTIPATH=off measured "$dir/one.log" --expect-digest "$digest" \
  || { cat "$dir/one.log"; fail "the single-path run failed"; }
[ "$mgmt_pct" -lt 5 ] || fail "with HCOMM_MULTIPATH=off the management network carried $mgmt_pct%"

# cut LABEL NFT TABLE: the run with LABEL's network cut from 2 s to 5 s.
cut() {
  echo "$name: 3. the $1 network cut from 2 s to 5 s"
  measured "$dir/$1.log" --expect-digest "$digest" --max-op-ms 20000 --expect-detection \
    --fault "at=2,do=cmd:nft -f $2,for=3,undo=nft delete table inet $3"
  local rc=$?
  grep -E '^\[0\] (rank 0: (event|fault)|hcomm-chaos|# +(ok|FAIL))' "$dir/$1.log"
  [ "$rc" -eq 0 ] || { cat "$dir/$1.log"; fail "hcomm-chaos failed with the $1 network cut"; }
  grep -q 'rank 0: event .* \(reconnected\|failback\) ' "$dir/$1.log" \
    || fail "the $1 network's link was not made again after the cut"
}
cut management "$dir/drop-mgmt.nft" chaosm
cut fabric "$dir/drop-fabric.nft" chaos
echo "$name: ok"
