#!/usr/bin/env bash
# Killing one rank of 3 makes hcomm-run exit non-zero within seconds and leaves nothing behind.
# Usage: kill_one_rank.sh HCOMM_RUN EXAMPLE_ALLREDUCE
set -u
run=$1 prog=$2
marker="hcomm_kill_test_$$"
# Many iterations of a mid-size allreduce keep the ranks busy long enough to be killed.
HCOMM_TEST_MARKER=$marker "$run" -n 3 --timeout 100 bash -c \
  "exec -a $marker-\$HCOMM_RANK $prog 50000000" > /tmp/$marker.log 2>&1 &
launcher=$!
for _ in $(seq 1 200); do
  pid=$(pgrep -f "^$marker-1" | head -n1)
  [ -n "$pid" ] && break
  sleep 0.05
done
[ -n "${pid:-}" ] || { echo "rank 1 never started"; cat /tmp/$marker.log; kill $launcher; exit 1; }
sleep 1
start=$(date +%s%N)
kill -9 "$pid"
wait $launcher
rc=$?
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
left=$(pgrep -f "^$marker-" | wc -l)
echo "hcomm-run exited $rc after ${took_ms} ms; processes left: $left"
tail -n 5 /tmp/$marker.log
rm -f /tmp/$marker.log
[ "$rc" -ne 0 ] && [ "$left" -eq 0 ] && [ "$took_ms" -lt 10000 ]
