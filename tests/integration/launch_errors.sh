#!/usr/bin/env bash
# Launching mistakes, as the ranks report them (dataplane/launch_check.hpp), each case as separate
# processes sharing one rendezvous (no launcher to catch the mistake first):
#   duplicate  ranks 0, 1 and 1 again of a world of 2: every process fails, both claimants named
#              (host and pid) on both rank-1 processes and on rank 0; once started together,
#              once with the second claimant started after the others made their communicator;
#   size       rank 0 says world size 2, rank 1 says 3: both fail naming both sizes and ranks.
# Each within the connect deadline (HCOMM_CONNECT_TIMEOUT_MS=10000) and a little more.
# Usage: launch_errors.sh TRANSPORT_PROBE
set -u
probe=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
failed() { echo "launch_errors: FAIL: $*"; fail=1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
export HCOMM_JOB_KEY=launch-errors-test-key-0123456789 HCOMM_CONNECT_TIMEOUT_MS=10000

# start NAME RANK SIZE: one process, its output in $dir/NAME.log, its pid in $dir/NAME.pid. The
# process keeps its communicator 3 s (transport_probe --stay), as a job would.
start() {
  HCOMM_RANK=$2 HCOMM_WORLD_SIZE=$3 "$probe" --stay 3000 > "$dir/$1.log" 2>&1 &
  echo $! > "$dir/$1.pid"
}
# finish NAME...: waits for each; each must have failed (false when one did not).
finish() {
  local all=0
  for name in "$@"; do
    wait "$(cat "$dir/$name.pid")" && { echo "  $name succeeded"; all=1; }
  done
  return $all
}

# named_by_all: r0, r1a and r1b each failed naming both claimants of rank 1 (host and pid).
named_by_all() {
  local ok=0 name line
  pid_a=$(cat "$dir/r1a.pid") pid_b=$(cat "$dir/r1b.pid")
  for name in r0 r1a r1b; do
    line=$(grep -o "rank 1 is claimed by two processes: .*" "$dir/$name.log" | head -1)
    [ -n "$line" ] || { echo "  $name does not name the duplicate"; sed 's/^/  | /' "$dir/$name.log"; ok=1; continue; }
    case "$line" in *"pid $pid_a on "*"pid $pid_b on "* | *"pid $pid_b on "*"pid $pid_a on "*) ;;
      *) echo "  $name does not name both claimants ($pid_a, $pid_b): $line"; ok=1 ;; esac
    echo "  $name: $(grep -m1 "claimed by two" "$dir/$name.log")"
  done
  return $ok
}

# duplicate_case together|late: ranks 0, 1 and 1 again. "together": the three start at once;
# when the second claimant arrives during the rendezvous every process fails there, when it
# arrives after the others made their communicator it fails at once and their communicator is
# aborted with its message (observe/). "late": the second claimant starts only after the others
# made their communicator (that second path, on purpose). Either way all three must fail
# naming both claimants, within the connect deadline.
duplicate_case() {
  local ok=0
  export HCOMM_ROOT_ADDR=127.0.0.1:$(free_port)
  t0=$(date +%s.%N)
  start r0 0 2
  start r1a 1 2
  if [ "$1" = late ]; then
    for _ in $(seq 100); do
      grep -q "^probe" "$dir/r0.log" && grep -q "^probe" "$dir/r1a.log" && break
      sleep 0.05
    done
    grep -q "^probe" "$dir/r0.log" || { echo "  r0 and r1a did not make their communicator"; ok=1; }
  fi
  start r1b 1 2
  finish r0 r1a r1b || ok=1
  t=$(echo "$(date +%s.%N) - $t0" | bc)
  named_by_all || ok=1
  (($(echo "$t < 12" | bc))) || { echo "  took ${t} s, past the connect deadline"; ok=1; }
  return $ok
}
for how in together late; do
  if duplicate_case "$how" 2>&1; then
    echo "launch_errors: duplicate rank ($how): all three failed after ${t} s"
  else
    failed "duplicate rank ($how): not every process named both claimants"
  fi
done

export HCOMM_ROOT_ADDR=127.0.0.1:$(free_port)
t0=$(date +%s.%N)
start s0 0 2
start s1 1 3
finish s0 s1 || failed "a rank of the size mismatch succeeded"
t=$(echo "$(date +%s.%N) - $t0" | bc)
echo "launch_errors: world-size mismatch: both failed after ${t} s"
for name in s0 s1; do
  grep -q "the ranks disagree on the world size: rank 0 (pid [0-9]* on .*) says 2, rank 1 (pid [0-9]* on .*) says 3" \
    "$dir/$name.log" || { failed "$name does not name both sizes"; sed 's/^/  | /' "$dir/$name.log"; continue; }
  echo "  $name: $(grep -m1 "disagree" "$dir/$name.log")"
done
(($(echo "$t < 12" | bc))) || failed "took ${t} s, past the connect deadline"

[ "$fail" -eq 0 ] && echo "launch_errors: PASS"
exit "$fail"
