#!/bin/bash
# Black-box tests of hcomm-run: launcher_tests.sh LAUNCHER CASE
#
# Every wait is bounded. Ranks that are meant to be stopped by the launcher sleep for
# 300.<marker> seconds, a marker unique to this run, so that leftovers can be found with pgrep
# without confusing them with another test's processes, and die on their own if all else fails.

set -u

LAUNCHER=${1:?usage: launcher_tests.sh LAUNCHER CASE}
CASE=${2:?usage: launcher_tests.sh LAUNCHER CASE}

MARKER=$(printf '%07d%05d' $$ "$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')")
NAP="300.$MARKER"
LEFTOVER_PATTERN="300\\.$MARKER"
WORK=$(mktemp -d)
OUT=$WORK/out
ERR=$WORK/err

cleanup() {
  local pids
  pids=$(pgrep -f "$LEFTOVER_PATTERN")
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL ($CASE): $*" >&2
  echo "--- launcher stdout:" >&2
  cat "$OUT" >&2 2>/dev/null
  echo "--- launcher stderr:" >&2
  cat "$ERR" >&2 2>/dev/null
  exit 1
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_until SECONDS COMMAND...: polls COMMAND until it succeeds; fails after SECONDS.
wait_until() {
  local deadline=$(($(now_ms) + $1 * 1000))
  shift
  until "$@"; do
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}

# Starts the launcher in the background with stdout/stderr in $OUT/$ERR; sets LAUNCHER_PID.
start_launcher() {
  "$LAUNCHER" "$@" >"$OUT" 2>"$ERR" &
  LAUNCHER_PID=$!
  STARTED_MS=$(now_ms)
}

# Waits at most SECONDS for the background launcher; sets RC and ELAPSED_MS.
wait_launcher() {
  # bash reaps background jobs as they end, so kill -0 fails once the launcher is gone.
  wait_until "$1" eval '! kill -0 $LAUNCHER_PID 2>/dev/null' ||
    fail "launcher still running after $1 s"
  wait "$LAUNCHER_PID"
  RC=$?
  ELAPSED_MS=$(($(now_ms) - STARTED_MS))
}

no_leftovers() { ! pgrep -f "$LEFTOVER_PATTERN" >/dev/null; }

expect_no_leftovers() {
  wait_until 5 no_leftovers || fail "processes left behind: $(pgrep -af "$LEFTOVER_PATTERN")"
}

expect_rc() { [ "$RC" -eq "$1" ] || fail "exit status $RC, expected $1"; }

expect_line() {  # FILE REGEX
  grep -Eq -- "$2" "$1" || fail "no line matching '$2' in $(basename "$1")"
}

# Waits until every rank of N has printed "pid=PID" and sets RANK_PIDS (by rank).
wait_rank_pids() {
  wait_until 10 eval "[ \$(grep -c 'pid=' '$OUT') -ge $1 ]" || fail "ranks did not report their pids"
  RANK_PIDS=()
  for ((r = 0; r < $1; r++)); do
    RANK_PIDS[r]=$(sed -n "s/^\[$r\] pid=\([0-9]*\)\$/\1/p" "$OUT")
  done
}

case_success() {
  start_launcher -n 3 sh -c \
    'echo rank=$HCOMM_RANK size=$HCOMM_WORLD_SIZE local=$HCOMM_LOCAL_RANK/$HCOMM_LOCAL_SIZE \
       addr=$HCOMM_ROOT_ADDR; echo oops=$HCOMM_RANK >&2'
  wait_launcher 10
  expect_rc 0
  for r in 0 1 2; do
    expect_line "$OUT" "^\[$r\] rank=$r size=3 local=$r/3 addr=127\.0\.0\.1:[0-9]+\$"
    expect_line "$ERR" "^\[$r\] oops=$r\$"
  done
  [ "$(grep -c . "$OUT")" -eq 3 ] || fail "expected exactly 3 stdout lines"
  grep -q oops "$OUT" && fail "stderr lines ended up on stdout"
  [ "$(sed 's/.*addr=//' "$OUT" | sort -u | wc -l)" -eq 1 ] || fail "ranks saw different root addresses"
}

case_environment() {
  HCOMM_RANK=99 HCOMM_ROOT_ADDR=elsewhere:1 HCOMM_TEST_KEPT=yes \
    start_launcher -n 2 --port 23456 sh -c 'echo $HCOMM_RANK $HCOMM_ROOT_ADDR $HCOMM_TEST_KEPT'
  wait_launcher 10
  expect_rc 0
  expect_line "$OUT" '^\[0\] 0 127\.0\.0\.1:23456 yes$'
  expect_line "$OUT" '^\[1\] 1 127\.0\.0\.1:23456 yes$'
}

case_output_lines() {
  # Many long lines from 4 ranks at once, plus an unterminated last line each: every line must
  # arrive whole, tagged with the rank that wrote it.
  start_launcher -n 4 awk 'BEGIN {
      r = ENVIRON["HCOMM_RANK"]; pad = sprintf("%300s", ""); gsub(/ /, "x", pad)
      for (i = 0; i < 3000; i++) printf "r%s-%d-%s-end\n", r, i, pad
      printf "tail-of-%s", r }'
  wait_launcher 20
  expect_rc 0
  for r in 0 1 2 3; do
    n=$(grep -cE "^\[$r\] r$r-[0-9]+-x{300}-end\$" "$OUT")
    [ "$n" -eq 3000 ] || fail "rank $r: $n of 3000 lines arrived intact"
    expect_line "$OUT" "^\[$r\] tail-of-$r\$"
  done
  [ "$(wc -l <"$OUT")" -eq 12004 ] || fail "unexpected extra or split lines"
}

case_no_tag() {
  start_launcher -n 2 --no-tag sh -c 'echo plain-$HCOMM_RANK'
  wait_launcher 10
  expect_rc 0
  expect_line "$OUT" '^plain-0$'
  expect_line "$OUT" '^plain-1$'
}

case_rank_fails() {
  # The sleeping ranks are shells with sleep as a child: stopping must reach those too.
  start_launcher -n 3 sh -c \
    "if [ \$HCOMM_RANK = 1 ]; then echo failing; exit 3; fi; sleep $NAP; echo not reached"
  wait_launcher 10
  expect_rc 3
  [ "$ELAPSED_MS" -lt 8000 ] || fail "took $ELAPSED_MS ms"
  expect_line "$OUT" '^\[1\] failing$'
  expect_line "$ERR" 'rank 1 exited with code 3'
  grep -q 'not reached' "$OUT" && fail "a sleeping rank finished normally"
  expect_no_leftovers
}

case_rank_killed() {
  start_launcher -n 3 sh -c "echo pid=\$\$; exec sleep $NAP"
  wait_rank_pids 3
  kill -9 "${RANK_PIDS[1]}"
  wait_launcher 10
  expect_rc 137
  expect_line "$ERR" 'rank 1 was killed by signal SIGKILL'
  expect_no_leftovers
}

case_rank_ignores_sigterm() {
  # A rank deaf to SIGTERM still goes, by SIGKILL after the grace period.
  # Rank 0 fails only once rank 1 ignores SIGTERM (bounded: 10 s).
  start_launcher -n 2 sh -c "
    if [ \$HCOMM_RANK = 1 ]; then trap '' TERM; touch '$WORK/deaf'; exec sleep $NAP; fi
    for i in \$(seq 200); do [ -e '$WORK/deaf' ] && break; sleep 0.05; done; exit 5"
  wait_launcher 10
  expect_rc 5
  [ "$ELAPSED_MS" -ge 1500 ] || fail "the grace period was skipped ($ELAPSED_MS ms)"
  expect_no_leftovers
}

case_timeout() {
  start_launcher -n 3 --timeout 1 sh -c "sleep $NAP; echo not reached"
  wait_launcher 10
  expect_rc 124
  [ "$ELAPSED_MS" -ge 900 ] || fail "timed out too early ($ELAPSED_MS ms)"
  expect_line "$ERR" 'timeout of 1 s'
  expect_no_leftovers
}

case_sigkilled() {
  start_launcher -n 3 sh -c "echo pid=\$\$; exec sleep $NAP"
  wait_rank_pids 3
  kill -9 "$LAUNCHER_PID"
  wait "$LAUNCHER_PID" 2>/dev/null
  expect_no_leftovers
}

case_signaled() {
  start_launcher -n 3 sh -c "echo pid=\$\$; sleep $NAP; echo not reached"
  wait_rank_pids 3
  kill -TERM "$LAUNCHER_PID"
  wait_launcher 10
  expect_rc 143
  expect_line "$ERR" 'got SIGTERM'
  expect_no_leftovers
}

case_bad_usage() {
  # check ARGS...: hcomm-run ARGS must exit 2 with a message.
  check() {
    RC=0
    timeout 10 "$LAUNCHER" "$@" >"$OUT" 2>"$ERR" || RC=$?
    [ "$RC" -eq 2 ] || fail "'$*': exit status $RC, expected 2"
    expect_line "$ERR" '^hcomm-run: '
  }
  check
  check true
  check -n 0 true
  check -n -1 true
  check -n many true
  check -n 2
  check -n 2 --
  check -n 2 --timeout
  check -n 2 --timeout 0 true
  check -n 2 --port 70000 true
  check -n 2 --bogus true
  check -n 2 hcomm-no-such-program-$MARKER
  expect_line "$ERR" "cannot execute 'hcomm-no-such-program-$MARKER': No such file or directory"
  check -n 2 /nonexistent/prog
  check -n 2 "$WORK"

  timeout 10 "$LAUNCHER" --help >"$OUT" 2>"$ERR" || fail "--help failed"
  expect_line "$OUT" '^Usage: hcomm-run -n N'
}

case_exec_failure() {
  # Passes the launcher's own checks but fails in execve: the interpreter does not exist.
  printf '#!/nonexistent/interpreter\n' >"$WORK/script"
  chmod +x "$WORK/script"
  start_launcher -n 2 "$WORK/script"
  wait_launcher 10
  expect_rc 127
  expect_line "$ERR" "^hcomm-run: cannot execute '$WORK/script': No such file or directory\$"
}

declare -F "case_$CASE" >/dev/null || { echo "unknown case '$CASE'" >&2; exit 2; }
"case_$CASE"
echo "PASS ($CASE)"
