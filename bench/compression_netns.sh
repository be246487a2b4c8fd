#!/usr/bin/env bash
# compression_netns.sh: what the codecs buy on a slow link, measured side by side in one run.
#
# Two hosts (network namespaces) joined by one veth pair, the fabric, shaped to 1 Gbit/s with a
# token bucket (tbf) on both ends. Needs root, ip, tc and nsenter; builds nothing (run
# scripts/setup.sh or `cmake --build build` first). Writes markdown tables to stdout.
#
# Usage: bench/compression_netns.sh [-r ROUNDS] [-B BUILD_DIR] [-R RATE]
#   -r ROUNDS  rounds, at least 5 (default 5): within a round every variant runs once, in an
#              order that rotates from round to round; tables give the median over rounds
#   -B DIR     the build directory (default build)
#   -R RATE    the tbf rate (default 1gbit)
#
# 1. float32 allreduce of 64 MiB with none, fp16 and bf16, 1 rank per host (2 ranks) and 2 ranks
#    per host (4 ranks: shared memory within a host, TCP across): hcomm-bench -n 3 -w 1 -c 1
#    (the check holds every element to the README's bound; the largest error is printed).
# 2. The lossless codecs' bytes on the fabric (host A's veth tx counter), 1 rank per host:
#    codec_streams (tests/integration) sends 100 versions of a 4 MiB float32 buffer, checked bit
#    for bit by the receiver: 10% of the elements changed per version, or none (delta against
#    none); a gradient with 90% zeros, or random floats (zstd against none). The communicators
#    skip calibration (HCOMM_CALIBRATE=0) so that the counter holds the sends and the rendezvous.
# 3. `auto` on one host: hcomm-bench allreduce over shared memory, auto against none.
set -u
rounds=5 build=build rate=1gbit
while getopts "r:B:R:" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    B) build=$OPTARG ;;
    R) rate=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-B BUILD_DIR] [-R RATE]" >&2; exit 2 ;;
  esac
done
[ "$rounds" -ge 5 ] || { echo "$0: -r: at least 5 rounds" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
run=$build/tools/hcomm-run bench=$build/tools/hcomm-bench streams=$build/tests/integration/codec_streams
for f in "$run" "$bench" "$streams"; do
  [ -x "$f" ] || { echo "$0: $f is missing: build first (scripts/setup.sh)" >&2; exit 2; }
done
name=compression_netns
fail() { echo "$name: $*" >&2; exit 1; }
# shellcheck source=../tests/skip.sh
. "$here/tests/skip.sh"
# shellcheck source=../tests/netns/veth_hosts.sh
. "$here/tests/netns/veth_hosts.sh"
require_root "to create network namespaces"
require_tools ip tc nsenter unshare python3

dir=$(mktemp -d)
trap 'veth_hosts_down; rm -rf "$dir"' EXIT
veth_hosts_up "hcz$$" "fabric:10.81.0.1:10.81.0.2"
for ns in "$ns_a" "$ns_b"; do
  ip netns exec "$ns" tc qdisc add dev fabric root tbf rate "$rate" burst 256kb latency 20ms \
    || fail "tc tbf on $ns"
done
veth_hosts_wrapper "$dir/rank.sh" 10.81.0.1
unset HCOMM_TRANSPORT HCOMM_ALGO HCOMM_HOST_ID HCOMM_COMPRESSION
export HCOMM_SOCKET_IFNAME=fabric HCOMM_FAILOVER=off HCOMM_CONNECT_TIMEOUT_MS=20000
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "# compression on two namespace hosts, fabric shaped to $rate (tbf); $cpu; $rounds rounds"

tx() { ip netns exec "$ns_a" cat /sys/class/net/fabric/statistics/tx_bytes; }
results=$dir/results.txt
: > "$results"

# rotate N: the variants of a round, starting at round r's offset
rotate() {
  local r=$1
  shift
  local n=$# i
  local items=("$@")
  for ((i = 0; i < n; i++)); do echo "${items[$(((i + r) % n))]}"; done
}

echo "$name: 1. allreduce 64 MiB" >&2
for r in $(seq 1 "$rounds"); do
  for variant in $(rotate "$r" 2:none 2:fp16 2:bf16 4:none 4:fp16 4:bf16); do
    ranks=${variant%%:*} codec=${variant#*:}
    log=$dir/ar-$ranks-$codec-$r.log
    "$run" -n "$ranks" --timeout 300 "$dir/rank.sh" "$bench" allreduce -b 64M -e 64M -n 3 -w 1 \
      -c 1 --compression "$codec" > "$log" 2>&1 || { cat "$log"; fail "allreduce $variant failed"; }
    t=$(awk '/^\[0\] +[0-9]/ {print $8}' "$log")
    err=$(sed -n 's/^\[0\] # Largest error *: \([^ ]*\) (bound \([^,]*\),.*/\1 \2/p' "$log")
    echo "ar $ranks $codec $t ${err:-0 0}" >> "$results"
  done
done

echo "$name: 2. lossless codecs, wire bytes" >&2
for r in $(seq 1 "$rounds"); do
  for variant in $(rotate "$r" delta10:none delta10:delta unchanged:none unchanged:delta \
    sparse90:none sparse90:zstd random:none random:zstd); do
    mode=${variant%%:*} codec=${variant#*:}
    log=$dir/st-$mode-$codec-$r.log
    before=$(tx)
    # No calibration: its few MB would count against every variant alike.
    HCOMM_CALIBRATE=0 "$run" -n 2 --timeout 300 "$dir/rank.sh" "$streams" "$mode" "$codec" 4194304 100 > "$log" 2>&1 \
      || { cat "$log"; fail "codec_streams $variant failed"; }
    grep -q VERIFIED "$log" || { cat "$log"; fail "codec_streams $variant: not verified"; }
    echo "st $mode $codec $(( $(tx) - before ))" >> "$results"
  done
done

echo "$name: 3. auto on one host (shared memory)" >&2
for r in $(seq 1 "$rounds"); do
  for codec in $(rotate "$r" none auto); do
    log=$dir/shm-$codec-$r.log
    env -u HCOMM_SOCKET_IFNAME "$run" -n 2 --timeout 300 "$bench" allreduce -b 8 -e 64M -f 8 -n 20 -w 3 -c 1 \
      --compression "$codec" > "$log" 2>&1 || { cat "$log"; fail "shm $codec failed"; }
    awk -v c="$codec" '/^\[0\] +[0-9]/ {print "shm", c, $2, $8, $NF}' "$log" >> "$results"
  done
done

cp "$results" "$build/compression_netns.txt"  # the raw figures, kept
python3 - "$results" << 'PY'
import statistics, sys
from collections import defaultdict
ar, st, shm = defaultdict(list), defaultdict(list), defaultdict(list)
err = defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "ar":
        ar[(int(f[1]), f[2])].append(float(f[3]))
        err[(int(f[1]), f[2])].append((float(f[4]), float(f[5])))
    elif f[0] == "st":
        st[(f[1], f[2])].append(int(f[3]))
    else:
        shm[(int(f[2]), f[1])].append((float(f[3]), f[4]))
med = statistics.median
print("\n## 1. float32 allreduce of 64 MiB (median of the rounds, ms)\n")
print("| ranks | none | fp16 | fp16/none | bf16 | bf16/none | largest error fp16 / bf16 (bound) |")
print("|---|---|---|---|---|---|---|")
for n in (2, 4):
    t = {c: med(ar[(n, c)]) / 1000 for c in ("none", "fp16", "bf16")}
    e16 = max(err[(n, "fp16")]); eb = max(err[(n, "bf16")])
    print(f"| {n} ({n // 2} per host) | {t['none']:.0f} | {t['fp16']:.0f} | {t['fp16'] / t['none']:.2f} "
          f"| {t['bf16']:.0f} | {t['bf16'] / t['none']:.2f} | {e16[0]:.3g} ({e16[1]:.3g}) / "
          f"{eb[0]:.3g} ({eb[1]:.3g}) |")
print("\n## 2. bytes on the fabric, 100 sends of 4 MiB (median of the rounds)\n")
print("| payload | codec | bytes | none's bytes | codec/none |")
print("|---|---|---|---|---|")
for mode, codec in (("delta10", "delta"), ("unchanged", "delta"), ("sparse90", "zstd"), ("random", "zstd")):
    b, n = med(st[(mode, codec)]), med(st[(mode, "none")])
    print(f"| {mode} | {codec} | {b:.0f} | {n:.0f} | {100 * b / n:.1f}% |")
print("\n## 3. allreduce over shared memory, auto against none (median us; wire% of auto, -: no frames)\n")
print("| bytes | none | auto | auto/none | auto wire% |")
print("|---|---|---|---|---|")
for size in sorted({k[0] for k in shm}):
    n = med([x[0] for x in shm[(size, "none")]])
    a = med([x[0] for x in shm[(size, "auto")]])
    w = sorted({x[1] for x in shm[(size, "auto")]})  # "-": no frame at all (slot board)
    print(f"| {size} | {n:.2f} | {a:.2f} | {a / n:.2f} | {', '.join(w)} |")
PY
