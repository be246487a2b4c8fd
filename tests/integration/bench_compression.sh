#!/usr/bin/env bash
# hcomm-bench --compression on 3 ranks, each its own host (HCOMM_HOST_ID; TCP between them, as
# fp16/bf16 frames go between hosts only): every operation with every codec and -c 1 (fp16/bf16:
# within the README's bound, on inputs with fractions; the lossless codecs: bit-exact) must report
# no wrong element; the wire% column must show halving for the lossy codecs on float32 and the
# JSON rows must carry the codec and the ratio.
# Usage: bench_compression.sh HCOMM_RUN HCOMM_BENCH
set -eu
run=$1 bench=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
hosts=(bash -c 'HCOMM_HOST_ID=host$HCOMM_RANK exec "$0" "$@"')

for codec in fp16 bf16 zstd delta auto; do
  for op in allreduce broadcast reduce allgather reduce_scatter alltoall gather scatter sendrecv; do
    log="$dir/$op-$codec.log"
    "$run" -n 3 --timeout 60 "${hosts[@]}" "$bench" "$op" -b 4K -e 256K -f 8 -n 3 -w 1 -c 1 -r 1 \
      --compression "$codec" -J "$dir/$op-$codec.json" > "$log" 2>&1 || { cat "$log"; exit 1; }
    grep -q "Out of bounds values : 0 OK" "$log" || { cat "$log"; exit 1; }
  done
done
# float64 avg under bf16, and an integer type that the lossy codecs leave alone.
"$run" -n 3 --timeout 60 "${hosts[@]}" "$bench" allreduce -b 64K -e 1M -f 4 -d float64 -o avg -n 2 -w 0 \
  --compression bf16 > "$dir/f64.log" 2>&1 || { cat "$dir/f64.log"; exit 1; }
"$run" -n 3 --timeout 60 "${hosts[@]}" "$bench" allreduce -b 64K -e 64K -d int32 -n 2 -w 0 \
  --compression fp16 -J "$dir/allreduce-int.json" > "$dir/int.log" 2>&1 || { cat "$dir/int.log"; exit 1; }
# Bad codec: usage error before joining.
rc=0; "$bench" allreduce --compression lz4 > /dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { echo "hcomm-bench --compression lz4 exited $rc, expected 2"; exit 1; }

python3 - "$dir" <<'PY'
import json, os, sys
d = sys.argv[1]
for name in sorted(os.listdir(d)):
    if not name.endswith(".json"):
        continue
    doc = json.load(open(os.path.join(d, name)))
    op, codec = name[:-5].rsplit("-", 1)
    for r in doc["results"]:
        assert r["wrong"] == 0, (name, r)
        if codec == "int":
            assert r["compression"] == "fp16" and abs(r["wire_ratio"] - 1) < 1e-9, (name, r)
            continue
        assert r["compression"] == codec, (name, r)
        ratio = r["wire_ratio"]
        if op == "barrier" or ratio is None:
            continue
        # wire% is rank 0's frames: with root 1, broadcast and scatter send none from rank 0.
        if codec in ("fp16", "bf16") and r["bytes"] >= 32768 and op not in ("broadcast", "scatter"):
            assert 0.45 < ratio < 0.56, (name, r)  # half, plus small control frames
        if codec == "auto":
            assert ratio > 0.99, (name, r)  # loopback outruns zstd: auto stays raw
print("bench_compression: ok")
PY
