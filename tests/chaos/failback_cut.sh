#!/usr/bin/env bash
# failback_cut: no unprotected window after a fail-back. The fabric between two hosts is cut, and
# then cut again right after each of 10 fail-backs (failback_cut.cpp: rank 0 watches its
# failover_stats() and runs the cut the moment the fail-back shows). Since the fallback link
# stands by through every fail-back, each cut must move traffic to it at once.
#
# Two hosts (two_hosts.sh: fabric + management network, one rank each, primary links on the
# fabric, fallback links on the management network). Fast keep-alive settings, so that each
# round takes about a second: HCOMM_KEEPALIVE_MS=40, HCOMM_KEEPALIVE_TIMEOUT_MS=150 (a cut is
# detected within ~200 ms), HCOMM_RECONNECT_MIN_MS=20, HCOMM_RECONNECT_MAX_MS=100,
# HCOMM_FAILBACK_MS=60; HCOMM_FAILOVER_LIMIT=100/60 so that the peer is never pinned.
# Checks: failback_cut's (every allreduce result right, none over 3 s, 10 rounds of fail-back
# then failover, no fallback link made again) and, in both ranks' logs, no "no other link up".
# Needs root, ip netns, nsenter, unshare, nft; otherwise skipped (77), or failed under CI
# (tests/skip.sh). ~20 s.
#
# Usage: failback_cut.sh HCOMM_RUN FAILBACK_CUT
set -u
run=$1 prog=$2
here=$(cd "$(dirname "$0")" && pwd)
name=failback_cut

fail() { echo "$name: FAIL: $*" >&2; exit 1; }
# shellcheck source=two_hosts.sh
. "$here/two_hosts.sh"

two_hosts_start "fbc$$"
HCOMM_KEEPALIVE_MS=40 HCOMM_KEEPALIVE_TIMEOUT_MS=150 HCOMM_RECONNECT_MIN_MS=20 \
  HCOMM_RECONNECT_MAX_MS=100 HCOMM_FAILBACK_MS=60 HCOMM_FAILOVER_LIMIT=100/60 \
  HCOMM_DEBUG=INFO HCOMM_DEBUG_SUBSYS=NET \
  timeout 130 "$run" -n 2 --timeout 120 "$dir/rank.sh" "$prog" --rounds 10 --hold-ms 300 \
  --drop "nft -f $dir/drop-fabric.nft" --undrop "nft delete table inet chaos" \
  > "$dir/run.log" 2>&1
rc=$?
grep -v -E 'link up|rdma: opened|closed its communicator' "$dir/run.log"
[ "$rc" -eq 0 ] || fail "failback_cut failed (exit $rc): see above"
if grep -q 'no other link up' "$dir/run.log"; then
  fail "a cut found no other link up: operations waited"
fi
[ "$(grep -c 'failback_cut: PASSED' "$dir/run.log")" -eq 2 ] || fail "not both ranks passed"
echo "$name: ok"
