#!/usr/bin/env bash
# auto_selection.sh: is the cost model's choice as good as the best forced algorithm?
#
# Usage: bench/auto_selection.sh [-n RANKS] [-r ROUNDS] [-o OP] [-t TOLERANCE] [BYTES...]
#   -n RANKS      ranks (default 4)
#   -r ROUNDS     rounds (default 5, at least 3)
#   -o OP         allreduce (default), broadcast or reduce
#   -t TOLERANCE  allowed excess of auto over the best forced algorithm (default 0.10)
#   BYTES         message sizes (default 8 67108864)
#
# Per round and size it runs hcomm-bench once with the library's choice (-a auto) and once per
# algorithm the operation has on one host (hcomm-info --algorithms; forced with -a), in an order rotated every round so that none
# always runs first, float32 sum, iterations 256 MiB / BYTES clamped to 10..200. It prints per
# size the median time of each, the algorithm auto picked, auto / best forced, and OK or SLOWER
# (beyond the tolerance); the exit status is 1 when a size is SLOWER or a run failed.
set -euo pipefail

ranks=4
rounds=5
op=allreduce
tolerance=0.10
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { print substr($0, 3) }' "$0"; }
while getopts "n:r:o:t:h" opt; do
  case $opt in
    n) ranks=$OPTARG ;;
    r) rounds=$OPTARG ;;
    o) op=$OPTARG ;;
    t) tolerance=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
sizes=("$@")
((${#sizes[@]} > 0)) || sizes=(8 67108864)
((rounds >= 3)) || { echo "auto_selection: -r must be at least 3" >&2; exit 2; }
case $op in
  allreduce | broadcast | reduce) ;;
  *) echo "auto_selection: unknown op $op" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/bench/build/auto_selection"
rm -rf "$out"
mkdir -p "$out"
bash "$root/scripts/setup.sh" >&2
# The operation's algorithms as the library names them (hcomm-info --algorithms), but hier: on
# one host the cost model never considers it, so auto is not measured against it.
read -r -a algos <<<"$("$root/build/tools/hcomm-info" --algorithms | sed -n "s/^$op: //p" |
  tr -d , | sed 's/\bhier\b//')"
((${#algos[@]} > 0)) || { echo "auto_selection: hcomm-info lists no algorithm for $op" >&2; exit 1; }
candidates=(auto "${algos[@]}")

status=0
for ((round = 0; round < rounds; ++round)); do
  for bytes in "${sizes[@]}"; do
    iters=$(((256 << 20) / bytes))
    ((iters < 10)) && iters=10
    ((iters > 200)) && iters=200
    warmup=$((iters / 10 > 2 ? iters / 10 : 2))
    for ((i = 0; i < ${#candidates[@]}; ++i)); do
      algo=${candidates[$(((i + round) % ${#candidates[@]}))]}
      json="$out/$round.$bytes.$algo.json"
      if ! output=$("$root/build/tools/hcomm-run" -n "$ranks" --timeout 300 \
        "$root/build/tools/hcomm-bench" "$op" -b "$bytes" -e "$bytes" -n "$iters" -w "$warmup" \
        -c 1 -a "$algo" -J "$json" 2>&1); then
        printf 'run FAILED: %s %s %s\n%s\n' "$op" "$bytes" "$algo" "$output" >&2
        status=1
      fi
    done
  done
  echo "round $((round + 1))/$rounds done" >&2
done

python3 - "$out" "$op" "$ranks" "$tolerance" "${sizes[@]}" <<'PY' || status=1
import glob, json, os, statistics, sys
out, op, ranks, tol, sizes = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:]
times, picked, wrong = {}, {}, 0
for path in glob.glob(os.path.join(out, "*.json")):
    _, size, algo, _ = os.path.basename(path).split(".")
    for r in json.load(open(path))["results"]:
        times.setdefault((size, algo), []).append(r["time_us"])
        wrong += r["wrong"] or 0
        if algo == "auto":
            picked.setdefault(size, set()).add(r["algo"])
print(f"{op} float32 sum, {ranks} ranks, median of rounds (us)")
algos = sorted({a for (_, a) in times if a != "auto"})
print(f"{'size':>10} " + " ".join(f"{a:>10}" for a in algos) + f" {'auto':>10} {'picked':>10} {'auto/best':>10}")
ok = True
for size in sizes:
    med = {a: statistics.median(times[(size, a)]) for a in algos + ["auto"] if (size, a) in times}
    best = min(med[a] for a in algos if a in med)
    ratio = med["auto"] / best
    verdict = "OK" if ratio <= 1 + tol else "SLOWER"
    ok = ok and verdict == "OK"
    print(f"{size:>10} " + " ".join(f"{med.get(a, float('nan')):>10.1f}" for a in algos) +
          f" {med['auto']:>10.1f} {'/'.join(sorted(picked.get(size, {'?'}))):>10} {ratio:>10.2f} {verdict}")
print(f"wrong elements: {wrong}")
sys.exit(0 if ok and wrong == 0 else 1)
PY
exit $status
