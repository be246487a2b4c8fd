#!/usr/bin/env bash
# Two "hosts" on the test machine, made of network namespaces: 4 ranks, the even ones on host A,
# the odd ones on host B (interleaved, so rings must reorder to 0 2 1 3), each host with its own
# network namespace, UTS hostname and IPv4 address on a veth pair between the two. The host
# identity is NOT forced (HCOMM_HOST_ID unset): hcomm must tell the hosts apart from the
# namespaces alone. Checks:
#   (a) every rank sees shm to the rank of its namespace and tcp to the other two, and the host
#       names of the namespaces (transport_probe); hcomm-info groups the hosts the same way;
#   (b) the collective matrix passes in that layout;
#   (c) hcomm-bench allreduce at 2 MiB sends fewer bytes across hosts with -a hier than -a ring.
# Needs root and `ip netns`; otherwise skipped (77), or failed under CI (tests/skip.sh).
#
# Wiring (tests/netns/veth_hosts.sh): namespaces hcomm-$$-a and hcomm-$$-b joined by the veth
# pair hcv$$ with 10.77.0.1/24 and 10.77.0.2/24 (the pair lives only inside the two namespaces,
# so parallel runs with the same addresses do not clash). hcomm-run starts every rank through a wrapper that moves
# it into its namespace with `nsenter --net` and into a fresh UTS namespace with its host name,
# and points HCOMM_ROOT_ADDR at 10.77.0.1 (rank 0, in A) with the port hcomm-run chose. Each
# rank's listener then binds the address of its route to the root (its veth address).
#
# Why nsenter rather than `ip netns exec`: `ip netns exec` also gives every process its own new
# mount namespace (to remount /sys), and the mount namespace is part of hcomm's host identity, so
# two ranks started that way in one network namespace count as different hosts and talk TCP.
# Check (d) shows what hcomm does in that case (informational, it does not fail the test).
#
# Usage: netns_hosts.sh HCOMM_RUN HCOMM_INFO TRANSPORT_PROBE COLLECTIVE_MATRIX HCOMM_BENCH
set -u
run=$1 info=$2 probe=$3 matrix=$4 bench=$5

name=netns_hosts
fail() { echo "netns_hosts: FAIL: $*" >&2; exit 1; }
# shellcheck source=../skip.sh
. "$(dirname "$0")/../skip.sh"
require_root "to create network namespaces"
require_tools ip nsenter unshare python3 timeout

# shellcheck source=../netns/veth_hosts.sh
. "$(dirname "$0")/../netns/veth_hosts.sh"
veth=hcv$$
addr_a=10.77.0.1 addr_b=10.77.0.2
dir=$(mktemp -d)
trap 'veth_hosts_down; rm -rf "$dir"' EXIT
veth_hosts_up "hcomm-$$" "$veth:$addr_a:$addr_b"
echo "netns_hosts: hosts $ns_a ($addr_a, hostA) and $ns_b ($addr_b, hostB) on veth pair $veth"

# The per-rank wrapper: even ranks on host A, odd ranks on host B. $1: how to enter the network
# namespace ("nsenter" or "ipnetns"); the rest: the program and its arguments.
cat > "$dir/rank.sh" << EOF
#!/usr/bin/env bash
how=\$1; shift
if [ \$((HCOMM_RANK % 2)) -eq 0 ]; then ns=$ns_a host=hostA; else ns=$ns_b host=hostB; fi
export HCOMM_ROOT_ADDR=$addr_a:\${HCOMM_ROOT_ADDR##*:}
if [ "\$how" = ipnetns ]; then
  exec ip netns exec "\$ns" unshare --uts bash -c 'hostname "\$0" && exec "\$@"' "\$host" "\$@"
fi
exec nsenter --net=/run/netns/\$ns unshare --uts bash -c 'hostname "\$0" && exec "\$@"' \\
  "\$host" "\$@"
EOF
chmod +x "$dir/rank.sh"
unset HCOMM_HOST_ID HCOMM_SOCKET_IFNAME HCOMM_TRANSPORT HCOMM_ALGO
export HCOMM_CONNECT_TIMEOUT_MS=20000

# ---- (a) transports and host names as every rank sees them.
# Expected: shm between ranks of one namespace (same parity), tcp across.
check_probe() {  # $1: probe output; prints the matrix, returns the number of wrong pairs
  python3 - "$1" << 'PY'
import re, sys
seen = {}
for line in open(sys.argv[1]):
    m = re.search(r"probe (\d+) -> (\d+) transport (\S+) host (\S+)", line)
    if m:
        seen[(int(m[1]), int(m[2]))] = (m[3], m[4])
bad = 0
for i in range(4):
    row = []
    for j in range(4):
        want = ("self" if i == j else "shm" if i % 2 == j % 2 else "tcp",
                "hostA" if j % 2 == 0 else "hostB")
        got = seen.get((i, j))
        row.append("%-4s" % (got[0] if got else "??"))
        if got != want:
            bad += 1
            print("  rank %d -> %d: got %s, expected %s" % (i, j, got, want))
    print("  rank %d: %s" % (i, " ".join(row)))
sys.exit(min(bad, 100))
PY
}
echo "netns_hosts: (a) transports per pair (expected shm within a namespace, tcp across)"
timeout 30 "$run" -n 4 --timeout 25 "$dir/rank.sh" nsenter "$probe" > "$dir/probe.log" 2>&1 \
  || { cat "$dir/probe.log"; fail "transport_probe failed"; }
check_probe "$dir/probe.log" || { cat "$dir/probe.log"; fail "wrong transports or host names"; }
# This host has no RDMA: every rank says once that it uses TCP to the other host.
[ "$(grep -c 'NET WARN: no RDMA, using TCP to other hosts' "$dir/probe.log")" -eq 4 ] \
  || { cat "$dir/probe.log"; fail "expected one 'no RDMA, using TCP' line per rank"; }

echo "netns_hosts: (a) hcomm-info groups the ranks by namespace"
timeout 30 "$run" -n 4 --timeout 25 "$dir/rank.sh" nsenter "$info" > "$dir/info.log" 2>&1 \
  || { cat "$dir/info.log"; fail "hcomm-info failed"; }
grep -q "communicator: 4 ranks" "$dir/info.log" || { cat "$dir/info.log"; fail "no rank table"; }
for r in 0 1 2 3; do
  host=hostA addr=$addr_a
  [ $((r % 2)) -eq 1 ] && host=hostB addr=$addr_b
  grep -qE "^\[0\] +$r +$host +$addr:[0-9]+ *$" "$dir/info.log" \
    || { cat "$dir/info.log"; fail "hcomm-info: rank $r is not on $host at $addr"; }
done
# Rank 0's row: rank 2 (its namespace) differs from ranks 1 and 3 (the other), which are 'T'.
row0=$(grep -E '^\[0\] +0 +- +\S+ +\S+ +\S+ *$' "$dir/info.log") \
  || { cat "$dir/info.log"; fail "hcomm-info: no transport row for rank 0"; }
read -r _ _ _ to1 to2 to3 <<< "$row0"
[ "$to1" = T ] && [ "$to3" = T ] && [ "$to2" != T ] \
  || { cat "$dir/info.log"; fail "hcomm-info: rank 0's row '$row0' does not group by namespace"; }
# Rank 2's entry is the legend's letter for shared memory ("'s' shared memory"). (This used to
# look for "'s' shm", which the legend never says: the check was skipped with a note.)
grep -q "'s' shared memory" "$dir/info.log" \
  || { cat "$dir/info.log"; fail "hcomm-info: the legend has no 's' for shared memory"; }
[ "$to2" = s ] || { cat "$dir/info.log"; fail "hcomm-info: rank 0 -> 2 is '$to2', not shm ('s')"; }
grep -qE '^\[0\] ring order .*: 0 2 1 3$' "$dir/info.log" \
  || { cat "$dir/info.log"; fail "hcomm-info: ring order is not 0 2 1 3"; }
echo "  hcomm-info row of rank 0: ${row0#\[0\] }; ring order 0 2 1 3"

# ---- (b) the collective matrix across the two namespaces.
# HCOMM_SPIN_US=0: each rank sees 2 ranks on its "host" and would busy-poll, but all 4 share this
# machine's cores (on 2 cores that makes the matrix ~40 s instead of ~30 s).
echo "netns_hosts: (b) collective matrix, 4 ranks on 2 namespace hosts"
start=$(date +%s)
# The matrix itself checks that it ran on that layout: shm within a namespace, tcp across, rings
# in the order 0 2 1 3 (at its start and at its end).
# Under a sanitizer (scripts/sanitize.sh sets HCOMM_TEST_TIME_SCALE) the matrix runs ~3x longer.
scale=${HCOMM_TEST_TIME_SCALE:-1}
HCOMM_SPIN_US=0 timeout $((70 * scale)) "$run" -n 4 --timeout $((60 * scale)) "$dir/rank.sh" \
  nsenter "$matrix" \
  --expect-transport shm,tcp --expect-ring-order 0,2,1,3 > "$dir/matrix.log" 2>&1 \
  || { tail -n 40 "$dir/matrix.log"; fail "the collective matrix failed"; }
grep -E '^\[[0-3]\] rank [0-3]: [0-9]+ checks, 0 failures' "$dir/matrix.log" | sed 's/^/  /'
[ "$(grep -cE '^\[[0-3]\] rank [0-3]: [0-9]+ checks, 0 failures' "$dir/matrix.log")" -eq 4 ] \
  || { tail -n 40 "$dir/matrix.log"; fail "the matrix did not report 4 clean ranks"; }
echo "  matrix took $(( $(date +%s) - start )) s"

# ---- (c) cross-host bytes of allreduce at 2 MiB: hier below ring.
echo "netns_hosts: (c) hcomm-bench allreduce 2 MiB, bytes per op across hosts, hier vs ring"
declare -A xhost
for algo in hier ring; do
  timeout 30 "$run" -n 4 --timeout 25 "$dir/rank.sh" nsenter "$bench" allreduce -b 2M -e 2M \
    -n 5 -w 1 -c 1 -a "$algo" -J "$dir/$algo.json" > "$dir/$algo.log" 2>&1 \
    || { cat "$dir/$algo.log"; fail "hcomm-bench -a $algo failed"; }
  xhost[$algo]=$(python3 - "$dir/$algo.json" "$algo" << 'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rows = [r for r in doc["results"] if r["bytes"] == 2 << 20]
assert len(rows) == 1, ("no single 2 MiB row", doc["results"])
r = rows[0]
assert r["wrong"] == 0, ("wrong elements", r)
assert r["algo"] == sys.argv[2], ("ran another algorithm", r)
assert r["cross_host_bytes"] is not None, ("no cross-host byte count", r)
print(r["cross_host_bytes"])
PY
  ) || { cat "$dir/$algo.log"; fail "hcomm-bench -a $algo: bad JSON ${xhost[$algo]:-}"; }
  echo "  $algo: ${xhost[$algo]} bytes per op across hosts"
done
[ "${xhost[hier]}" -gt 0 ] || fail "hier sent nothing across hosts (${xhost[hier]}): not counted?"
[ "${xhost[hier]}" -lt "${xhost[ring]}" ] \
  || fail "hier sends ${xhost[hier]} bytes across hosts, not fewer than ring's ${xhost[ring]}"

# ---- (d) informational: ranks started with `ip netns exec` (one mount namespace each).
echo "netns_hosts: (d) note: transports when ranks enter with 'ip netns exec' (not checked)"
if timeout 30 "$run" -n 4 --timeout 25 "$dir/rank.sh" ipnetns "$probe" > "$dir/ipnetns.log" 2>&1
then
  grep -E '^\[0\] probe 0 -> 2 ' "$dir/ipnetns.log" | sed 's/^/  /'
else
  echo "  the probe failed under 'ip netns exec':"; tail -n 5 "$dir/ipnetns.log" | sed 's/^/  /'
fi

echo "netns_hosts: ok"
