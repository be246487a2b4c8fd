#!/usr/bin/env bash
# From an operation's completion to the application: the Work::on_complete callback, and the
# reply at the actor that requested it through the communicator actor (CAF's sharing and
# work-stealing schedulers), next to one thread waking another (for scale). bench/actor_latency
# (actor_latency.cpp) runs one round of 2000 8-byte allreduces on 2 ranks that talk TCP over
# loopback (two host ids, so that the progress engine, not a waiting caller, completes them);
# ROUNDS alternated rounds of each; prints the median of the rounds' medians and p90s.
# Usage: bench/actor_latency.sh [BUILD_DIR] [ROUNDS]   (default build, 5)
set -eu
build=$(cd "${1:-build}" && pwd)
rounds=${2:-5}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $rounds rounds"
for ((r = 1; r <= rounds; ++r)); do
  for mode in "wake" "callback" "actor --policy sharing" "actor --policy stealing"; do
    # shellcheck disable=SC2086
    "$build/tools/hcomm-run" -n 2 --timeout 120 bash -c \
      'HCOMM_HOST_ID=host$HCOMM_RANK exec "$0" "$@"' "$build/bench/actor_latency" --mode $mode \
      2>/dev/null | sed -n 's/^\[0\] //p' >> "$log"
  done
done
python3 - "$log" << 'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(.*): median (\d+) ns, p90 (\d+) ns", line)
    if m:
        rows.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3))))
for what, v in rows.items():
    med = statistics.median(x[0] for x in v)
    p90 = statistics.median(x[1] for x in v)
    print(f"{what:40s} median {med / 1000:8.2f} us   p90 {p90 / 1000:8.2f} us   ({len(v)} rounds)")
PY
