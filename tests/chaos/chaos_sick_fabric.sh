#!/usr/bin/env bash
# chaos_sick_fabric: hcomm-chaos' faults for a sick link (loss:PERCENT@IFACE through nftables
# numgen random, rate:RATE@IFACE through tbf) on the fabric between two hosts; whatever the
# library does about them, every result must stay right.
#
# The two hosts of chaos_fabric_cut (two_hosts.sh: fabric + management network, one rank each,
# primary on the fabric, fallback on the management network).
# 1. A fault-free run of hcomm-chaos (random data, ring forced) prints the digest of its results.
# 2. The same run while rank 0 drops 20% of host A's fabric packets at random, in and out, from
#    1 s to 4 s: the same digest, no operation over 20 s; the nftables table gone afterwards.
# 3. The same while host A's fabric egress is held to 20 Mbit/s from 1 s to 4 s: the same
#    digest; the qdisc gone afterwards.
# hcomm-chaos fails a run whose fault command failed. Needs root, ip netns, nsenter, unshare,
# nft, tc; otherwise skipped (77), or failed under CI (tests/skip.sh). ~30 s.
#
# Usage: chaos_sick_fabric.sh HCOMM_RUN HCOMM_CHAOS
set -u
run=$1 chaos=$2
here=$(cd "$(dirname "$0")" && pwd)
name=chaos_sick_fabric

fail() { echo "$name: FAIL: $*" >&2; exit 1; }
# shellcheck source=two_hosts.sh
. "$here/two_hosts.sh"
require_tools tc

two_hosts_start "sick$$"
workload=(-b 256K -n 600 -d random -a ring)

# chaos LOG ARGS...: hcomm-chaos on both hosts, bounded.
chaos() {
  local log=$1
  shift
  timeout 100 "$run" -n 2 --timeout 90 "$dir/rank.sh" "$chaos" "${workload[@]}" "$@" > "$log" 2>&1
}

echo "$name: 1. fault-free run"
chaos "$dir/clean.log" || { cat "$dir/clean.log"; fail "the fault-free run failed"; }
digest=$(chaos_digest "$dir/clean.log") || exit 1
echo "  digest $digest"

# sick LOG FAULT: the workload under FAULT (a --fault spec), its digest and bounds checked.
sick() {
  chaos "$1" -i 2 --expect-digest "$digest" --max-op-ms 20000 --fault "$2"
  local rc=$?
  cat "$1"
  [ "$rc" -eq 0 ] || fail "hcomm-chaos reported a failure under $2 (exit $rc): see above"
}

echo "$name: 2. 20% of host A's fabric packets dropped at random from 1 s to 4 s"
sick "$dir/loss.log" "at=1,do=loss:20@fabric,for=3"
if ip netns exec "$ns_a" nft list tables | grep -q hcomm_chaos_loss; then
  fail "the loss table is still there"
fi

echo "$name: 3. host A's fabric egress held to 20 Mbit/s from 1 s to 4 s"
sick "$dir/rate.log" "at=1,do=rate:20mbit@fabric,for=3"
if ip netns exec "$ns_a" tc qdisc show dev fabric | grep -q tbf; then
  fail "the tbf qdisc is still on host A's fabric"
fi
echo "$name: ok"
