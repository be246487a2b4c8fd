#!/usr/bin/env bash
# torch_vs_gloo.sh: torch.distributed with backend "hcomm" against "gloo", side by side in the
# same processes (bench/torch_backends.py: hcomm is the default group, a gloo group spans the same
# ranks; within a round each size runs on both, the order flipping from round to round). Writes
# markdown tables (medians over the rounds, hcomm/gloo ratios) to stdout.
#
# 1. dist.all_reduce of float32, 8 B to 64 MiB, 2 ranks on one host (hcomm: shared memory).
# 2. The same between two hosts: network namespaces joined by one veth pair (TCP for both
#    backends: HCOMM_SOCKET_IFNAME / GLOO_SOCKET_IFNAME name it), with receive packet steering
#    on the veth ends (tests/netns/veth_hosts.sh) and without. Needs root, ip and nsenter;
#    skipped with a note otherwise.
# 3. DDP training steps on 2 ranks, one host: a compute-bound MLP and a gradient-bound model
#    (bench/torch_backends.py says which).
# Each rank runs one compute thread (torch.set_num_threads(1)): the ranks share the cores.
#
# Usage: bench/torch_vs_gloo.sh [-r ROUNDS] [-B BUILD_DIR]   (ROUNDS at least 5, default 5)
set -u
rounds=5 build=build
while getopts "r:B:" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    B) build=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-B BUILD_DIR]" >&2; exit 2 ;;
  esac
done
[ "$rounds" -ge 5 ] || { echo "$0: -r: at least 5 rounds" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
run=$build/tools/hcomm-run
python=/usr/bin/python3
if [ ! -x "$run" ] || ! ls "$build"/python/hcomm/_torch*.so > /dev/null 2>&1; then
  echo "$0: hcomm-run or the torch backend is not built in $build (scripts/setup.sh)" >&2
  exit 2
fi
name=torch_vs_gloo
fail() { echo "$name: $*" >&2; exit 1; }
# shellcheck source=../tests/skip.sh
. "$here/tests/skip.sh"
# shellcheck source=../tests/netns/veth_hosts.sh
. "$here/tests/netns/veth_hosts.sh"

dir=$(mktemp -d)
trap 'veth_hosts_down; rm -rf "$dir"' EXIT
export PYTHONPATH=$build/python
unset HCOMM_TRANSPORT HCOMM_ALGO HCOMM_HOST_ID HCOMM_COMPRESSION RANK WORLD_SIZE MASTER_ADDR MASTER_PORT
results=$dir/results.txt
: > "$results"
worker=$here/bench/torch_backends.py

# measure LAYOUT MODE WRAPPER...: one run of torch_backends.py; its lines go to $results.
measure() {
  local layout=$1 mode=$2
  shift 2
  local log=$dir/$layout-$mode.log
  echo "$name: $layout $mode ($rounds rounds)" >&2
  "$run" -n 2 --timeout 1800 "$@" "$python" "$worker" "$mode" "$rounds" > "$log" 2>&1 \
    || { cat "$log"; fail "$layout $mode failed"; }
  sed -n "s/^\[0\] \(allreduce\|ddp\) /$layout \1 /p" "$log" >> "$results"
}

# two_hosts_allreduce LAYOUT RPS: the allreduce between two namespace hosts, with receive
# packet steering on the veth ends or not (RPS 1/0: tests/netns/veth_hosts.sh says what it does).
two_hosts_allreduce() {
  VETH_RPS=$2 veth_hosts_up "hct$$" "fabric:10.82.0.1:10.82.0.2"
  veth_hosts_wrapper "$dir/rank.sh" 10.82.0.1
  HCOMM_SOCKET_IFNAME=fabric GLOO_SOCKET_IFNAME=fabric HCOMM_CONNECT_TIMEOUT_MS=20000 \
    measure "$1" allreduce "$dir/rank.sh"
  veth_hosts_down
}

measure one-host allreduce
measure one-host ddp
two_hosts=0
if [ "$(id -u)" -eq 0 ] && command -v nsenter > /dev/null && ip netns add "hct$$-probe" 2> /dev/null; then
  ip netns del "hct$$-probe"
  two_hosts_allreduce two-hosts 1
  two_hosts_allreduce two-hosts-no-rps 0
  two_hosts=1
else
  echo "$name: two hosts skipped (needs root and network namespaces)" >&2
fi

cp "$results" "$build/torch_vs_gloo.txt"  # the raw figures, kept
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "# torch.distributed: hcomm against gloo ($cpu, $(nproc) cores, torch $("$python" -c 'import torch; print(torch.__version__)'), $rounds rounds)"
"$python" - "$results" "$two_hosts" << 'PY'
import statistics, sys
from collections import defaultdict
t = defaultdict(list)
for line in open(sys.argv[1]):
    layout, mode, what, backend, _round, sec = line.split()
    t[(layout, mode, what, backend)].append(float(sec))
med = statistics.median
def size(b):
    b = int(b)
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n:
            return f"{b // n} {unit}"
    return f"{b} B"
def table(layout, title):
    print(f"\n## {title}\n")
    print("| bytes | hcomm (us) | gloo (us) | hcomm/gloo |")
    print("|---|---|---|---|")
    worst = 0
    for what in sorted({k[2] for k in t if k[:2] == (layout, "allreduce")}, key=int):
        h, g = med(t[(layout, "allreduce", what, "hcomm")]), med(t[(layout, "allreduce", what, "gloo")])
        worst = max(worst, h / g)
        print(f"| {size(what)} | {h * 1e6:.1f} | {g * 1e6:.1f} | {h / g:.2f} |")
    print(f"\nLargest ratio: {worst:.2f}")
table("one-host", "dist.all_reduce, float32, 2 ranks on one host (median of the rounds)")
if sys.argv[2] == "1":
    table("two-hosts", "dist.all_reduce, float32, 2 hosts (network namespaces, TCP over veth "
                       "with receive packet steering)")
    table("two-hosts-no-rps", "The same without receive packet steering (veth's default)")
print("\n## DDP training step, 2 ranks on one host (median of the rounds, ms)\n")
print("| model (parameters) | hcomm | gloo | hcomm/gloo |")
print("|---|---|---|---|")
for what in sorted({k[2] for k in t if k[:2] == ("one-host", "ddp")}):
    h, g = med(t[("one-host", "ddp", what, "hcomm")]), med(t[("one-host", "ddp", what, "gloo")])
    kind, params = what.split(":")
    print(f"| {kind} ({int(params) / 1e6:.1f} M) | {h * 1e3:.1f} | {g * 1e3:.1f} | {h / g:.2f} |")
PY
