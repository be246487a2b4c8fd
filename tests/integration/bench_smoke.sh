#!/usr/bin/env bash
# hcomm-bench on 3 ranks: every operation over small sizes with -c 1 must report no wrong
# element, exit 0 and write a JSON file that parses and holds every required key.
# Usage: bench_smoke.sh HCOMM_RUN HCOMM_BENCH
set -eu
run=$1 bench=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

for op in allreduce broadcast reduce allgather reduce_scatter alltoall gather scatter sendrecv \
  barrier; do
  "$run" -n 3 --timeout 60 "$bench" "$op" -b 8 -e 64K -f 8 -n 5 -w 1 -c 1 -d float32 -r 1 \
    -J "$dir/$op.json" > "$dir/$op.log" 2>&1 || { cat "$dir/$op.log"; exit 1; }
  grep -q "Out of bounds values : 0 OK" "$dir/$op.log" || { cat "$dir/$op.log"; exit 1; }
done
# Integer avg (truncating division) and a reduced-precision type with a non-zero root.
"$run" -n 3 --timeout 60 "$bench" allreduce -b 1K -e 1K -d int8 -o avg -n 2 -w 0 \
  -J "$dir/avg.json" > "$dir/avg.log" 2>&1 || { cat "$dir/avg.log"; exit 1; }
"$run" -n 3 --timeout 60 "$bench" broadcast -b 6 -e 6K -f 32 -d bfloat16 -r 2 -n 2 -w 0 \
  -J "$dir/bcast_bf16.json" > "$dir/bcast_bf16.log" 2>&1 || { cat "$dir/bcast_bf16.log"; exit 1; }
# Bad usage exits 2 before joining anything.
rc=0; "$bench" allreduce -d uint32 > /dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { echo "hcomm-bench -d uint32 exited $rc, expected 2"; exit 1; }

python3 - "$dir"/*.json <<'PY'
import json, sys
top = {"tool", "op", "world_size", "dtype", "redop", "root", "iters", "warmup", "results"}
row = {"op", "dtype", "redop", "root", "bytes", "count", "algo", "time_us", "algbw", "busbw",
       "wrong"}
for path in sys.argv[1:]:
    with open(path) as f:
        doc = json.load(f)
    assert top <= doc.keys(), (path, top - doc.keys())
    assert doc["tool"] == "hcomm-bench" and doc["world_size"] == 3, path
    assert doc["results"], (path, "no results")
    for r in doc["results"]:
        assert row <= r.keys(), (path, row - r.keys())
        assert r["wrong"] == 0, (path, r)
        assert r["time_us"] > 0, (path, r)
        assert r["op"] == doc["op"], (path, r)
print("bench_smoke: %d JSON files OK" % len(sys.argv[1:]))
PY
