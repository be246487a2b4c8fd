#!/usr/bin/env bash
# QoS marking on the wire: a communicator of class priority 5 sends its TCP traffic with DSCP
# CS5 (IP TOS 0xa0), so that switches can honour the class; a default communicator sends CS0.
# Two namespace hosts (tests/chaos/two_hosts.sh); nftables counters in host A count the bytes
# leaving it (fabric or management network) by DSCP while hcomm-bench sendrecv runs between the
# hosts.
# Needs root, ip netns, nsenter, unshare, nft; otherwise skipped (77), or failed under CI
# (tests/skip.sh).
# Usage: qos_marking.sh HCOMM_RUN HCOMM_BENCH
set -u
run=$1 bench=$2
here=$(cd "$(dirname "$0")" && pwd)
name=qos_marking
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
# shellcheck source=../chaos/two_hosts.sh
. "$here/../chaos/two_hosts.sh"
two_hosts_start "qm$$"

# Both networks count: when the fabric is slow to answer (under a sanitizer), traffic may move to
# the fallback link on the management network, which carries the class's marking too.
# Bytes, not packets: how many packets carry a run's 50 MiB depends on how the sender's writes
# coalesce (GSO), which changes with its speed (under a sanitizer, a quarter as many).
count() {  # count DSCP: bytes counted so far leaving host A (not on lo) with that DSCP
  ip netns exec "$ns_a" nft list chain inet marks out |
    sed -n "s/.*ip dscp $1 counter packets [0-9]* bytes \([0-9]*\).*/\1/p"
}
mib=$((1 << 20))
ip netns exec "$ns_a" nft -f - << 'NFT' || fail "cannot load the counting rules"
table inet marks {
  chain out {
    type filter hook output priority 0;
    oifname != "lo" ip dscp cs5 counter
    oifname != "lo" ip dscp cs0 counter
  }
}
NFT

bench_run() {  # bench_run QOS: a 2-host sendrecv of 1 MiB, 50 times
  HCOMM_QOS=$1 HCOMM_LINK_GBPS=10 timeout 60 "$run" -n 2 --timeout 50 "$dir/rank.sh" \
    "$bench" sendrecv -b 1M -e 1M -n 50 -w 2 > "$dir/bench.log" 2>&1 \
    || { cat "$dir/bench.log"; fail "hcomm-bench failed (HCOMM_QOS=$1)"; }
}

bench_run "priority=5"
cs5=$(count cs5) cs0=$(count cs0)
echo "$name: priority 5: $cs5 bytes CS5, $cs0 bytes CS0 leaving host A"
[ "${cs5:-0}" -gt $((40 * mib)) ] ||
  fail "expected the class's 50 MiB marked CS5, counted ${cs5:-none} bytes"
[ "${cs0:-0}" -lt "$((cs5 / 10))" ] || fail "too many unmarked (CS0) bytes: $cs0 vs $cs5"

bench_run "priority=0,min=10"
cs5b=$(count cs5) cs0b=$(count cs0)
echo "$name: priority 0: $((cs5b - cs5)) more bytes CS5, $((cs0b - cs0)) more CS0"
[ "$((cs5b - cs5))" -lt 65536 ] || fail "a priority-0 class sent CS5 packets"
[ "$((cs0b - cs0))" -gt $((40 * mib)) ] || fail "a priority-0 class should send CS0"
echo "$name: PASS"
