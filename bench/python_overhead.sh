#!/usr/bin/env bash
# python_overhead.sh: what an 8-byte all_reduce costs through Python against C++, side by side.
# Per round (at least 5, the order alternating): hcomm-bench allreduce -b 8 -e 8 (C++) and
# bench/python_overhead.py (hcomm.all_reduce on a 2-element float32 array), 2 ranks on this host
# (shared memory), each the slowest rank's median of N timed calls. Prints both medians over the
# rounds and their difference. Usage: bench/python_overhead.sh [-r ROUNDS] [-n CALLS] [-B BUILD]
set -eu
rounds=7 calls=5000 build=build
while getopts "r:n:B:" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    n) calls=$OPTARG ;;
    B) build=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-n CALLS] [-B BUILD_DIR]" >&2; exit 2 ;;
  esac
done
[ "$rounds" -ge 5 ] || { echo "$0: -r: at least 5" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
run=$build/tools/hcomm-run
cxx=() py=()
for r in $(seq 1 "$rounds"); do
  for side in $( ((r % 2)) && echo "cxx py" || echo "py cxx"); do
    if [ "$side" = cxx ]; then
      t=$("$run" -n 2 "$build/tools/hcomm-bench" allreduce -b 8 -e 8 -n "$calls" -w 200 -c 0 \
        | awk '/^\[0\] +[0-9]/ {print $8}')
      cxx+=("$t")
    else
      t=$("$run" -n 2 env PYTHONPATH="$build/python" /usr/bin/python3 "$here/python_overhead.py" \
        "$calls" | sed -n 's/^\[0\] python_us //p')
      py+=("$t")
    fi
  done
done
/usr/bin/python3 - "${cxx[*]}" "${py[*]}" <<'PY'
import statistics, subprocess, sys
cxx = [float(x) for x in sys.argv[1].split()]
py = [float(x) for x in sys.argv[2].split()]
model = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
model = next((l.split(":", 1)[1].strip() for l in model.splitlines() if l.startswith("Model name")), "?")
c, p = statistics.median(cxx), statistics.median(py)
print(f"# 8-byte allreduce, 2 ranks on one host, {model}; medians of {len(cxx)} rounds")
print(f"C++ (hcomm-bench)  {c:.3f} us   rounds: {' '.join(f'{x:.2f}' for x in cxx)}")
print(f"Python             {p:.3f} us   rounds: {' '.join(f'{x:.2f}' for x in py)}")
print(f"Python - C++       {p - c:.3f} us")
PY
