#!/usr/bin/env bash
# Multi-path against one network: a 64 MiB allreduce between two hosts whose two networks are
# each shaped to 1 Gbit/s, with HCOMM_MULTIPATH=off (everything on the fabric) and =on (large
# frames on both), in alternated rounds.
#
# Two hosts (network namespaces, tests/chaos/two_hosts.sh) with a fabric and a management
# network; tbf at 1 Gbit/s on the egress of both networks on both hosts (both directions of
# both paths); 2 ranks, primary TCP links on the fabric, fallback on the management network.
# Each round runs hcomm-bench allreduce -b 64M (ring, 1 warm-up and ITERS timed iterations,
# every element checked) once per mode, starting with a different mode each round; prints each
# round's times, the medians over rounds and their ratio (off / on: how much faster multi-path
# is). Needs root. Usage: bench/multipath.sh [BUILD_DIR] [ROUNDS] [ITERS]  (default build, 5, 5)
set -u
build=$(cd "${1:-build}" && pwd)
rounds=${2:-5}
iters=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
name=multipath
skip() { echo "$name: cannot run: $*"; exit 77; }
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
# shellcheck source=../tests/chaos/two_hosts.sh
. "$here/../tests/chaos/two_hosts.sh"
require_tools tc
two_hosts_start "mp$$"
for ns in "$ns_a" "$ns_b"; do
  for iface in fabric mgmt; do
    ip netns exec "$ns" tc qdisc replace dev "$iface" root tbf rate 1gbit burst 256kb latency 20ms \
      || fail "tbf on $iface in $ns"
  done
done
echo "$name: $(lscpu | sed -n 's/^Model name: *//p'); both networks shaped to 1 Gbit/s each way"

# bench MODE: the 64 MiB allreduce's time in us (hcomm-bench's time column), or fails.
bench() {
  local log="$dir/$1.log"
  HCOMM_MULTIPATH=$1 timeout 300 "$build/tools/hcomm-run" -n 2 --timeout 280 "$dir/rank.sh" \
    "$build/tools/hcomm-bench" allreduce -b 64M -e 64M -n "$iters" -w 1 -c 1 -a ring > "$log" 2>&1 \
    || { cat "$log"; fail "hcomm-bench with HCOMM_MULTIPATH=$1 failed"; }
  awk '$1 == "[0]" && $2 == 67108864 { if ($11 != 0) exit 1; print $8 }' "$log" \
    || fail "wrong elements with HCOMM_MULTIPATH=$1: $(cat "$log")"
}

off=() on=()
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
  for mode in $order; do
    t=$(bench "$mode")
    [ -n "$t" ] || fail "no time in hcomm-bench's output: $(cat "$dir/$mode.log")"
    if [ "$mode" = off ]; then off+=("$t"); else on+=("$t"); fi
    echo "  round $r: multipath $mode: $t us"
  done
done
python3 - "${off[*]}" "${on[*]}" << 'PY'
import statistics, sys
off = [float(x) for x in sys.argv[1].split()]
on = [float(x) for x in sys.argv[2].split()]
m_off, m_on = statistics.median(off), statistics.median(on)
print("multipath: 64 MiB allreduce, medians of %d alternated rounds: one network %.1f ms, "
      "both %.1f ms: %.2fx faster" % (len(off), m_off / 1e3, m_on / 1e3, m_off / m_on))
PY
