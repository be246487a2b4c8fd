#!/usr/bin/env bash
# Failover detection and recovery times, measured with hcomm-chaos over N fabric cuts.
#
# Two hosts (network namespaces, tests/chaos/two_hosts.sh) with a fabric and a management
# network; 2 ranks, primary TCP links on the fabric, fallback on the management network,
# default keep-alive (200 ms heartbeats, 800 ms timeout). A 1 MiB allreduce runs back to back
# while host A's fabric is dropped with nftables (both ways) for 1.5 s every 4 s, N times; the
# failover limit is raised so that every cut fails over and back. Prints hcomm-chaos' report
# of every cut and, per rank, the median and maximum detection time (from the cut to the
# failover) and recovery time (from the cut to the end of the first operation after it).
# Needs root. Usage: bench/failover_times.sh [BUILD_DIR] [N]   (default build, 12)
set -u
build=$(cd "${1:-build}" && pwd)
cuts=${2:-12}
here=$(cd "$(dirname "$0")" && pwd)
name=failover_times
skip() { echo "$name: cannot run: $*"; exit 77; }
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
# shellcheck source=../tests/chaos/two_hosts.sh
. "$here/../tests/chaos/two_hosts.sh"
two_hosts_start "ft$$"

seconds=$((2 + 4 * cuts + 2))
HCOMM_FAILOVER_LIMIT=1000/60 timeout $((seconds + 60)) "$build/tools/hcomm-run" -n 2 \
  --timeout $((seconds + 50)) "$dir/rank.sh" "$build/tools/hcomm-chaos" -b 1M -s "$seconds" \
  --flap "start=2,period=4000,count=$cuts,down=ip netns exec $ns_a nft -f $dir/drop-fabric.nft,up=ip netns exec $ns_a nft delete table inet chaos,down_for=1500" \
  --expect-failovers "$cuts" > "$dir/run.log" 2>&1
rc=$?
grep -E 'flap .*detected after|hcomm-chaos: (PASSED|FAILED)' "$dir/run.log"
python3 - "$dir/run.log" << 'PY'
import re, statistics, sys
det, rec = {}, {}
for line in open(sys.argv[1]):
    m = re.search(r"^\[(\d+)\] rank \d+: flap \S+ .*detected after ([\d.]+) ms.*recovered after ([\d.]+) ms", line)
    if m:
        det.setdefault(m[1], []).append(float(m[2]))
        rec.setdefault(m[1], []).append(float(m[3]))
for r in sorted(det):
    d, c = det[r], rec[r]
    print("rank %s: %d cuts; detection median %.0f ms, max %.0f ms; recovery median %.0f ms, "
          "max %.0f ms" % (r, len(d), statistics.median(d), max(d), statistics.median(c), max(c)))
PY
exit $rc
