#!/usr/bin/env bash
# hcomm-perf-mon attached to a running 4-rank hcomm-bench (1 MiB allreduce back to back for 6 s,
# its tenant mode -T): it prints every 100 ms for every rank, and its operations' GB/s agree with
# the GB/s hcomm-bench measured (iterations x bytes / elapsed, per rank) within 10%; --once prints
# one line per rank; the seeds' name hcomm_perf_mon runs it too.
# Usage: perf_mon.sh HCOMM_RUN HCOMM_BENCH HCOMM_PERF_MON
set -u
run=$1 bench=$2 mon=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"; [ -n "${job:-}" ] && kill "$job" 2> /dev/null' EXIT
fail=0
"$run" -n 4 --timeout 120 "$bench" allreduce -b 1M -T 6 -w 20 -J "$dir/bench.json" \
  > "$dir/bench.log" 2>&1 &
job=$!
sleep 1.5  # creation and warm-up
"$(dirname "$mon")/hcomm_perf_mon" --once --interval 200ms > "$dir/once.log" 2>&1 \
  || { fail=1; echo "perf_mon: FAIL: --once exited $?"; }
cat "$dir/once.log"
[ "$(grep -c 'rank [0-3]/4: .* ops/s' "$dir/once.log")" -ge 4 ] \
  || { fail=1; echo "perf_mon: FAIL: --once did not print every rank"; }
# Most of the bench's run (4 of its 6 s): with 4 ranks on 2 cores its speed varies over time.
timeout 4 "$mon" --interval 100ms --json --output "$dir/mon.log" > /dev/null
wait "$job" || { fail=1; cat "$dir/bench.log"; echo "perf_mon: FAIL: hcomm-bench failed"; }
job=
python3 - "$dir/bench.json" "$dir/mon.log" << 'PY' || fail=1
import json, statistics, sys
bench = json.load(open(sys.argv[1]))
gbps_of = {r["rank"]: r["iterations"] * bench["bytes"] / r["elapsed_s"] / 1e9 for r in bench["ranks"]}
by_rank = {}
for line in open(sys.argv[2]):
    s = json.loads(line)
    by_rank.setdefault(s["rank"], []).append(s)
ok = sorted(by_rank) == [0, 1, 2, 3]
for rank, samples in sorted(by_rank.items()):
    # The mean of equal intervals is the bytes over the whole window, as hcomm-bench's figure
    # is; the median would drop the intervals in which a rank waited for a core.
    rates = [s["op_gbps"] for s in samples]
    gbps = statistics.mean(rates)
    ratio = gbps / gbps_of[rank]
    print(f"rank {rank}: {len(samples)} samples in 4 s, mean {gbps:.3f} GB/s "
          f"(median {statistics.median(rates):.3f}, min {min(rates):.3f}), "
          f"hcomm-bench {gbps_of[rank]:.3f} GB/s, ratio {ratio:.3f}")
    ok &= len(samples) >= 30 and abs(ratio - 1) <= 0.10
print("perf_mon:", "OK" if ok else "FAIL: fewer than 30 samples, or GB/s off by more than 10%")
sys.exit(0 if ok else 1)
PY
exit "$fail"
