#!/usr/bin/env bash
# observe_overhead.sh: what observing costs an 8-byte allreduce, as hcomm-bench measures it
# (its time: the slowest rank's median iteration), in three settings alternated round by round:
#   off      nothing observed: HCOMM_TRACE_BUFFER_SIZE=0 HCOMM_STATS=0 HCOMM_STALL_WARN_MS=0
#   default  the flight recorder, the live counters and the stall report (profiling off)
#   profile  HCOMM_PROFILE=1 on top
# Prints each setting's median over rounds and its ratio to "off", with lscpu's model name.
# Usage: bench/observe_overhead.sh [-r ROUNDS] [-n RANKS] [-b BYTES]  (defaults 7, 2, 8)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=7 ranks=2 bytes=8
while getopts "r:n:b:" o; do
  case $o in
    r) rounds=$OPTARG ;;
    n) ranks=$OPTARG ;;
    b) bytes=$OPTARG ;;
    *) echo "usage: bench/observe_overhead.sh [-r ROUNDS] [-n RANKS] [-b BYTES]" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh > /dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
settings=(off default profile)
env_of() {
  case $1 in
    off) echo "HCOMM_TRACE_BUFFER_SIZE=0 HCOMM_STATS=0 HCOMM_STALL_WARN_MS=0" ;;
    default) echo "" ;;
    profile) echo "HCOMM_PROFILE=1 HCOMM_PROFILE_FILE=$dir/prof.%r.json" ;;
  esac
}
for ((r = 0; r < rounds; ++r)); do
  for ((k = 0; k < 3; ++k)); do
    s=${settings[$(((k + r) % 3))]}
    # shellcheck disable=SC2046
    env $(env_of "$s") build/tools/hcomm-run -n "$ranks" --timeout 120 build/tools/hcomm-bench \
      allreduce -b "$bytes" -e "$bytes" -n 20000 -w 1000 -c 0 -J "$dir/$s.$r.json" > /dev/null
  done
done
python3 - "$dir" "$rounds" "$ranks" "$bytes" "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" <<'PY'
import json, statistics, sys
d, rounds, ranks, size, cpu = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
med = {}
for s in ("off", "default", "profile"):
    times = [json.load(open(f"{d}/{s}.{r}.json"))["results"][0]["time_us"] for r in range(rounds)]
    med[s] = statistics.median(times)
print(f"allreduce {size} B on {ranks} ranks, hcomm-bench medians of {rounds} alternated rounds, {cpu}")
for s, t in med.items():
    print(f"  {s:8s} {t:8.2f} us   x{t / med['off']:.3f} of off")
PY
