#!/usr/bin/env bash
# A 4-rank HCOMM_PROFILE=1 run of hcomm-bench (allreduce from 8 B to 1 MiB) ->
# every rank's profile passes the Trace Event format check (and HCOMM_PROFILE=2's flow arrows
# pair up across ranks, on two hosts) -> hcomm-visualize -> report.html, which headless Chromium
# loads: the timeline and the table are rendered (DOM dump, tests/tools/report_dom.sh).
# Usage: observe_report.sh HCOMM_RUN HCOMM_BENCH TRACE_TOOLS_DIR TESTS_TOOLS_DIR
set -u
run=$1 bench=$2 tools=$3 tests=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
HCOMM_PROFILE=1 HCOMM_PROFILE_FILE=$dir/prof.%r.json "$run" -n 4 --timeout 120 "$bench" allreduce \
  -b 8 -e 1M -f 4 -n 20 -w 2 > "$dir/bench.log" 2>&1 || { cat "$dir/bench.log"; fail=1; }
python3 "$tests/check_trace_format.py" "$dir"/prof.*.json || fail=1
"$tools/hcomm-visualize" "$dir"/prof.*.json -o "$dir/report.html" || fail=1
bash "$tests/report_dom.sh" "$dir/report.html" || fail=1
# Level 2 on two hosts: every frame's send and receive, joined by flow arrows.
mkdir -p "$dir/l2"
HCOMM_PROFILE=2 HCOMM_PROFILE_FILE=$dir/l2/p.%r.json "$run" -n 4 --timeout 120 \
  bash -c 'HCOMM_HOST_ID=h$((HCOMM_RANK % 2)) exec "$0" "$@"' "$bench" allreduce -b 1K -e 256K \
  -f 16 -n 5 -w 1 > "$dir/l2.log" 2>&1 || { cat "$dir/l2.log"; fail=1; }
python3 "$tests/check_trace_format.py" --level 2 "$dir"/l2/*.json || fail=1
[ "$fail" -eq 0 ] && echo "observe_report: OK"
exit "$fail"
