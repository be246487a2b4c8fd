#!/usr/bin/env bash
# chaos_flapping: a fabric link that keeps failing and coming back must not make the traffic
# ping-pong forever: after HCOMM_FAILOVER_LIMIT failovers the peer stays on its fallback link
# ("pinned"), and results stay bit-identical throughout.
#
# The two hosts of chaos_fabric_cut (two_hosts.sh: fabric + management network, one rank each,
# primary on the fabric, fallback on the management network). Rank 0 drops everything on host
# A's fabric interface (nftables) for 400 ms every 2 s, 6 times from 1.5 s. Fast keep-alive
# settings make each drop a failover and each recovery a failback:
#   HCOMM_KEEPALIVE_MS=40, HCOMM_KEEPALIVE_TIMEOUT_MS=150: a 400 ms drop is detected;
#   HCOMM_RECONNECT_MIN_MS=20, HCOMM_RECONNECT_MAX_MS=100, HCOMM_FAILBACK_MS=60: the primary is
#   back soon after the drop ends;
#   HCOMM_FAILOVER_LIMIT=3/30: the 4th failover within 30 s pins the peer on the fallback.
# Why 400 ms down and 1.6 s up rather than a symmetric ~300 ms flap: the library gives a
# reconnection attempt at least 1 s (its redial timeout, max(1 s, 3 x keep-alive timeout)), so
# after a drop the primary comes back ~1.2 s later; with shorter up phases no failback would
# happen, hence only one failover, and the limit would never be reached (measured: failovers at
# +150-250 ms into each drop, failbacks ~1.3 s after them).
# Checks (hcomm-chaos): digest equal to a fault-free run's; at most limit + 1 = 4 failovers on
# each rank; a "pinned" event; traffic on "tcp-fallback" at the end; no operation over 10 s.
# Needs root, ip netns, nsenter, unshare, nft; otherwise skipped (77), or failed under CI
# (tests/skip.sh). ~25 s.
#
# Usage: chaos_flapping.sh HCOMM_RUN HCOMM_CHAOS
set -u
run=$1 chaos=$2
here=$(cd "$(dirname "$0")" && pwd)
name=chaos_flapping

fail() { echo "$name: FAIL: $*" >&2; exit 1; }
# shellcheck source=two_hosts.sh
. "$here/two_hosts.sh"

two_hosts_start "flap$$"
workload=(-b 64K -n 3000 -d random -a ring)

echo "$name: 1. fault-free run"
timeout 70 "$run" -n 2 --timeout 60 "$dir/rank.sh" "$chaos" "${workload[@]}" > "$dir/clean.log" 2>&1 \
  || { cat "$dir/clean.log"; fail "the fault-free run failed"; }
digest=$(chaos_digest "$dir/clean.log") || exit 1
echo "  digest $digest"

echo "$name: 2. host A's fabric dropped for 400 ms every 2 s, 6 times, failover limit 3/30"
HCOMM_KEEPALIVE_MS=40 HCOMM_KEEPALIVE_TIMEOUT_MS=150 HCOMM_RECONNECT_MIN_MS=20 \
  HCOMM_RECONNECT_MAX_MS=100 HCOMM_FAILBACK_MS=60 HCOMM_FAILOVER_LIMIT=3/30 \
  timeout 70 "$run" -n 2 --timeout 60 "$dir/rank.sh" "$chaos" "${workload[@]}" -i 4 \
  --expect-digest "$digest" \
  --flap "start=1.5,period=2000,down_for=400,count=6,down=nft -f $dir/drop-fabric.nft,up=nft delete table inet chaos" \
  --max-failovers 4 --expect-event pinned --expect-final-transport tcp-fallback \
  --max-op-ms 10000 > "$dir/flap.log" 2>&1
rc=$?
cat "$dir/flap.log"
[ "$rc" -eq 0 ] || fail "hcomm-chaos reported a failure (exit $rc): see above"
grep -q "^\[[01]\] rank [01]: event .* pinned " "$dir/flap.log" || fail "no pinned event printed"
echo "$name: ok"
