#!/usr/bin/env bash
# Launching mistakes, as the ranks report them (dataplane/launch_check.hpp), each case as separate
# processes sharing one rendezvous (no launcher to catch the mistake first):
#   duplicate  ranks 0, 1 and 1 again of a world of 2: every process fails, both claimants named
#              (host and pid) on both rank-1 processes and on rank 0;
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

# start NAME RANK SIZE: one process, its output in $dir/NAME.log, its pid in $dir/NAME.pid.
start() {
  HCOMM_RANK=$2 HCOMM_WORLD_SIZE=$3 "$probe" > "$dir/$1.log" 2>&1 &
  echo $! > "$dir/$1.pid"
}
# finish NAME...: waits for each; each must have failed. Prints the seconds it all took.
finish() {
  for name in "$@"; do
    wait "$(cat "$dir/$name.pid")" && echo "  $name succeeded"
  done
}

# The three start together. A claimant that arrives after the others formed their communicator
# fails alone (it is the only one still creating): on a loaded machine that can happen, so the
# case gets three tries and must pass one of them whole.
duplicate_case() {
  local ok=0
  export HCOMM_ROOT_ADDR=127.0.0.1:$(free_port)
  t0=$(date +%s.%N)
  start r0 0 2
  start r1a 1 2
  start r1b 1 2
  finish r0 r1a r1b
  t=$(echo "$(date +%s.%N) - $t0" | bc)
  pid_a=$(cat "$dir/r1a.pid") pid_b=$(cat "$dir/r1b.pid")
  for name in r0 r1a r1b; do
    line=$(grep -o "rank 1 is claimed by two processes: .*" "$dir/$name.log" | head -1)
    [ -n "$line" ] || { echo "  $name does not name the duplicate"; sed 's/^/  | /' "$dir/$name.log"; ok=1; continue; }
    case "$line" in *"pid $pid_a on "*"pid $pid_b on "* | *"pid $pid_b on "*"pid $pid_a on "*) ;;
      *) echo "  $name does not name both claimants ($pid_a, $pid_b): $line"; ok=1 ;; esac
    echo "  $name: $(grep -m1 "claimed by two" "$dir/$name.log")"
  done
  (($(echo "$t < 12" | bc))) || { echo "  took ${t} s, past the connect deadline"; ok=1; }
  return $ok
}
for try in 1 2 3; do
  if duplicate_case 2>&1; then
    echo "launch_errors: duplicate rank: all three failed after ${t} s (try $try)"
    break
  fi
  [ "$try" -eq 3 ] && failed "duplicate rank: not every process named both claimants in 3 tries"
done

export HCOMM_ROOT_ADDR=127.0.0.1:$(free_port)
t0=$(date +%s.%N)
start s0 0 2
start s1 1 3
finish s0 s1
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
