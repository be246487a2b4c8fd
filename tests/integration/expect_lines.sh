#!/usr/bin/env bash
# Runs a command and passes only when it exits 0 AND exactly COUNT lines of its output (stdout and
# stderr) match the extended regular expression REGEX: for a test that must show what carried its
# traffic (ctest's PASS_REGULAR_EXPRESSION alone would ignore the exit status).
# Usage: expect_lines.sh COUNT REGEX COMMAND [ARGS...]
set -u
count=$1 regex=$2
shift 2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" > "$log" 2>&1
rc=$?
cat "$log"
[ "$rc" -eq 0 ] || { echo "expect_lines: FAIL: the command exited $rc"; exit 1; }
got=$(grep -cE -- "$regex" "$log")
[ "$got" -eq "$count" ] \
  || { echo "expect_lines: FAIL: $got lines match '$regex', expected $count"; exit 1; }
echo "expect_lines: $got lines match '$regex'"
