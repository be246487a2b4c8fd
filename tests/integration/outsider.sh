#!/usr/bin/env bash
# An outsider against a live 2-rank job (tests/integration/outsider.cpp): the job runs under
# hcomm-run, which gives it a key; its ranks are on two hosts (HCOMM_HOST_ID), so their data
# links and fallback links are TCP listeners. The outsider, without the key and then with a wrong
# one, tries the rendezvous store and every listener of the job, and floods the store with 1 GiB.
# Passes when every attempt is refused, the refusals are in the job's log, rank 0 grew by less
# than 16 MiB, and every result of the job is right.
# Usage: outsider.sh HCOMM_RUN OUTSIDER
set -u
run=$1 prog=$2
dir=$(mktemp -d)
trap 'touch "$dir/stop"; rm -rf "$dir"' EXIT
fail() { echo "outsider: FAIL: $*"; [ -f "$dir/job.log" ] && sed 's/^/  job| /' "$dir/job.log"; exit 1; }

"$run" -n 2 --timeout 200 bash -c 'HCOMM_HOST_ID=host$HCOMM_RANK exec "$0" "$@"' \
  "$prog" job "$dir" > "$dir/job.log" 2>&1 &
job=$!
for _ in $(seq 300); do
  [ -s "$dir/rank0" ] && [ -s "$dir/rank1" ] && break
  sleep 0.1
done
[ -s "$dir/rank0" ] && [ -s "$dir/rank1" ] || fail "the job did not start"
read -r pid0 root < "$dir/rank0"
read -r pid1 _ < "$dir/rank1"
store_port=${root##*:}
mapfile -t ports < <(ss -Hltnp | grep -E "pid=($pid0|$pid1)," | awk '{print $4}' | sed 's/.*://' |
  grep -vx "$store_port" | sort -u)
echo "outsider: job ranks $pid0 $pid1, store port $store_port, listeners ${ports[*]}"
[ "${#ports[@]}" -ge 4 ] || fail "expected a data and a fallback listener per rank, found ${ports[*]}"

"$prog" attack "$store_port" "$pid0" "${ports[@]}"
attack=$?
touch "$dir/stop"
wait "$job"
job_rc=$?
sed 's/^/  job| /' "$dir/job.log" | grep -v "refused a connection" | head -20
[ "$attack" -eq 0 ] || fail "the outsider got in somewhere (exit $attack)"
[ "$job_rc" -eq 0 ] || fail "the job failed (exit $job_rc)"
[ "$(grep -c 'operations, 0 wrong' "$dir/job.log")" -eq 2 ] || fail "a rank's results were wrong"
grep -q "rendezvous store: refused a connection from 127.0.0.1" "$dir/job.log" ||
  fail "the store's refusals are not in the log"
refusals=$(grep -c "refused a connection from 127.0.0.1" "$dir/job.log")
[ "$refusals" -ge 5 ] || fail "only $refusals refusals logged (store + 4 listeners expected)"
grep "refused a connection" "$dir/job.log" | sed 's/^/  log| /' | head -8
echo "outsider: PASS: every attempt refused ($refusals refusals logged, once per listener and address), results right"
