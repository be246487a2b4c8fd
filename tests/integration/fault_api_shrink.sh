#!/usr/bin/env bash
# fault_api shrink: 4 ranks over TCP, rank K raises SIGKILL, the 3 survivors detect the loss,
# shrink and run collectives on the new communicator. hcomm-run --keep-going leaves the survivors
# running; this checks that exactly rank K died (by SIGKILL) and that every survivor passed.
# Usage: fault_api_shrink.sh HCOMM_RUN FAULT_API K
set -u
run=$1 prog=$2 k=$3 n=4
log=$(mktemp /tmp/fault_api_shrink.XXXXXX)
start=$(date +%s%N)
HCOMM_TRANSPORT=tcp HCOMM_FAILOVER=auto HCOMM_PEER_TIMEOUT_MS=1500 \
  "$run" -n $n --keep-going --timeout 90 "$prog" shrink "$k" >"$log" 2>&1
rc=$?
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$log"
echo "--- hcomm-run exited $rc after ${took_ms} ms"

bad=0
fail() { echo "FAIL (script): $*"; bad=1; }
# 128 + SIGKILL: the killed rank's status, the first (and only) failure.
[ "$rc" -eq 137 ] || fail "hcomm-run exit status $rc, expected 137 (rank $k killed by SIGKILL)"
grep -qx "hcomm-run: rank $k was killed by signal SIGKILL; --keep-going: the other ranks go on" \
  "$log" || fail "the launcher did not report rank $k killed by SIGKILL"
failures=$(grep -cE '^hcomm-run: rank [0-9]+ (was killed|exited with code)' "$log")
[ "$failures" -eq 1 ] || fail "$failures ranks failed, expected only rank $k"
grep -qx "hcomm-run: --keep-going: 3 of 4 ranks exited with code 0; rank $k was killed by signal SIGKILL" \
  "$log" || fail "the launcher's summary is not '3 of 4 ranks exited with code 0; rank $k killed'"
grep -q "^\[$k\] rank $k: raising SIGKILL" "$log" || fail "rank $k did not reach its kill"
for r in $(seq 0 $((n - 1))); do
  [ "$r" -eq "$k" ] && continue
  grep -qE "^\[$r\] fault_api shrink: RESULT PASS" "$log" || fail "rank $r did not pass"
  grep -qE "^\[$r\] new rank [0-9] of size 3" "$log" || fail "rank $r printed no new rank"
done
if grep -qE '^\[[0-9]+\] FAIL' "$log"; then fail "FAIL lines above"; fi
rm -f "$log"
[ "$bad" -eq 0 ] && echo "fault_api shrink (kill rank $k): PASS in ${took_ms} ms"
exit $bad
