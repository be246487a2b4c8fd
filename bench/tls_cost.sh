#!/usr/bin/env bash
# tls_cost.sh: what authentication and encryption cost a 64 MiB allreduce between two hosts.
#
# Two hosts (network namespaces) joined by one veth pair, one rank on each; hcomm-bench
# allreduce of 64 MiB float32 (-n ITERS -w 2 -c 1: every result checked) with
#   off   no job key (unauthenticated)
#   auth  a job key (hcomm-run's): every connection authenticated, then plain TCP
#   tls   a job key and HCOMM_TLS=1 (TLS 1.3, AES-128-GCM, keys from the job key)
# alternated within each round, the order rotating from round to round; prints the median time
# per variant over the rounds and its ratio to `off`, with the CPU model. Needs root, ip and
# nsenter; builds nothing (run scripts/setup.sh first).
#
# Usage: bench/tls_cost.sh [-r ROUNDS] [-n ITERS] [-B BUILD_DIR]
set -u
rounds=7 iters=10 build=build
while getopts "r:n:B:" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    n) iters=$OPTARG ;;
    B) build=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-n ITERS] [-B BUILD_DIR]" >&2; exit 2 ;;
  esac
done
[ "$rounds" -ge 5 ] || { echo "$0: -r: at least 5 rounds" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
run=$build/tools/hcomm-run bench=$build/tools/hcomm-bench
for f in "$run" "$bench"; do
  [ -x "$f" ] || { echo "$0: $f is missing: build first (scripts/setup.sh)" >&2; exit 2; }
done
name=tls_cost
fail() { echo "$name: $*" >&2; exit 1; }
# shellcheck source=../tests/skip.sh
. "$here/tests/skip.sh"
# shellcheck source=../tests/netns/veth_hosts.sh
. "$here/tests/netns/veth_hosts.sh"
require_root "to create network namespaces"
require_tools ip nsenter unshare python3

dir=$(mktemp -d)
trap 'veth_hosts_down; rm -rf "$dir"' EXIT
veth_hosts_up "hctc$$" "fabric:10.84.0.1:10.84.0.2"
veth_hosts_wrapper "$dir/rank.sh" 10.84.0.1
unset HCOMM_TRANSPORT HCOMM_ALGO HCOMM_HOST_ID HCOMM_COMPRESSION HCOMM_TLS HCOMM_JOB_KEY \
  HCOMM_JOB_KEY_FILE
export HCOMM_SOCKET_IFNAME=fabric HCOMM_FAILOVER=off HCOMM_CONNECT_TIMEOUT_MS=20000
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)

variant_env() {
  case $1 in
    off) echo "-u HCOMM_JOB_KEY" ;;
    auth) echo "HCOMM_TLS=0" ;;
    tls) echo "HCOMM_TLS=1" ;;
  esac
}
results=$dir/results.txt
: > "$results"
variants=(off auth tls)
for r in $(seq 1 "$rounds"); do
  for i in 0 1 2; do
    v=${variants[$(((i + r) % 3))]}
    log=$dir/$v-$r.log
    # shellcheck disable=SC2046 # the variant's env arguments, split on purpose
    "$run" -n 2 --timeout 300 "$dir/rank.sh" env $(variant_env "$v") "$bench" allreduce \
      -b 64M -e 64M -n "$iters" -w 2 -c 1 > "$log" 2>&1 || { cat "$log"; fail "$v failed"; }
    t=$(awk '/^\[0\] +[0-9]/ {print $8}' "$log")
    [ -n "$t" ] || { cat "$log"; fail "$v: no result line"; }
    echo "$v $t" >> "$results"
  done
  echo "$name: round $r of $rounds done" >&2
done
cp "$results" "$build/tls_cost.txt"
python3 - "$results" "$cpu" "$rounds" "$iters" << 'PY'
import statistics, sys
from collections import defaultdict
t = defaultdict(list)
for line in open(sys.argv[1]):
    v, us = line.split()
    t[v].append(float(us))
med = {v: statistics.median(x) for v, x in t.items()}
print(f"# 64 MiB float32 allreduce, 2 ranks on two namespace hosts (veth); {sys.argv[2]};"
      f" median of {sys.argv[3]} alternated rounds of {sys.argv[4]} iterations\n")
print("| variant | time (ms) | algbw (GB/s) | time / off | spread of the rounds (ms) |")
print("|---|---|---|---|---|")
for v, what in (("off", "no job key"), ("auth", "job key (authenticated)"),
                ("tls", "job key + HCOMM_TLS=1")):
    ms = med[v] / 1000
    print(f"| {what} | {ms:.1f} | {64 * 2**20 / med[v] / 1e3:.2f} | {med[v] / med['off']:.2f} "
          f"| {min(t[v]) / 1000:.1f}-{max(t[v]) / 1000:.1f} |")
PY
