# shellcheck shell=bash
# Sourced by the QoS tests: two "hosts" (network namespaces) joined by ONE veth pair whose two
# ends are shaped to 1 Gbit/s each way, and tenants (separate hcomm-bench jobs) sharing it:
#
#     host A (namespace hq-TAG-a)                          host B (namespace hq-TAG-b)
#     fabric 10.81.0.1/24 --tbf 1 Gbit/s-->  veth pair  <--tbf 1 Gbit/s-- fabric 10.81.0.2/24
#
# Every tenant is `hcomm-run -n 2` with its own rendezvous port: rank 0 in host A, rank 1 in
# host B (nsenter --net, so the mount namespace, part of hcomm's host identity, stays shared as in
# tests/integration/netns_hosts.sh, and the ranks of one namespace are one host: the library
# coordinates every tenant's rank of a host through that host's board). So host A's egress (every
# tenant's rank 0 sending) and host B's (every rank 1) are the bottlenecks, one per direction.
#
# The shaper: tbf at 1046 Mbit/s of wire bytes, burst 256 KiB, a queue of at most 5 ms. tbf
# counts whole frames: a full TCP segment is 1448 bytes of payload in 1514 on the wire
# (TCP/IP/Ethernet headers), so one TCP flow carries 1046 * 1448 / 1514 = 1000 Mbit/s of payload:
# the link is 1 Gbit/s of what hcomm sends, the capacity HCOMM_LINK_GBPS=1 states (tbf at 1gbit
# carries 0.956 Gbit/s of payload: hcomm pacing its classes to 1 Gbit/s then overfills it by 4.5%,
# the excess queues at the shaper and TCP's fairness squeezes the largest class). The 5 ms queue
# (~650 KiB) is about a switch port's buffer: traffic beyond the link's rate shows as queueing
# delay and drops, as on a real bottleneck (a longer queue only adds delay; a fair-queueing qdisc
# would isolate the latency tenant by itself and hide what hcomm does). qos_measure_link prints
# what the shaped link carries. QOS_TBF overrides the tbf parameters, e.g.
# QOS_TBF="rate 1gbit burst 256kb latency 50ms"; QOS_KEEP=1 keeps the
# tenants' logs and JSON files (the directory is named at exit).
#
# The caller sets $name, $run (hcomm-run) and $bench (hcomm-bench) and defines fail() first;
# skip() comes from tests/skip.sh. Functions:
#   qos_start TAG            skips (77; fails under CI) unless root with ip, tc, nsenter,
#                            unshare, timeout and python3 and unless tbf works; makes the hosts,
#                            $dir (removed at exit with the hosts) and the rank wrapper
#                            $dir/rank.sh
#   qos_tenant NAME PORT SECONDS [VAR=VALUE...] -- BENCH_ARGS...
#                            starts one tenant in the background: hcomm-bench BENCH_ARGS -T
#                            SECONDS -J $dir/NAME.json (log $dir/NAME.log), with the variables
#                            set for its ranks; bounded by SECONDS + 40 s
#   qos_wait                 waits for every tenant started; fails the test (with the log) when
#                            one failed
#   qos_measure_link         one tenant without a class and without HCOMM_LINK_GBPS (hcomm paces
#                            nothing): sets $link_gbps, the payload Gbit/s the shaped link carries
#                            each way, and prints it
#   analyze ARGS...          qos_analyze.py
# shellcheck disable=SC2154 # name, run, bench: the caller's
addr_a=10.81.0.1 addr_b=10.81.0.2
qos_tbf=${QOS_TBF:-rate 1046mbit burst 256kb latency 5ms}
qos_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../skip.sh
. "$qos_here/../skip.sh"
# shellcheck source=../netns/veth_hosts.sh
. "$qos_here/../netns/veth_hosts.sh"

qos_require() {
  require_root "to create network namespaces and shape them with tc"
  require_tools ip tc nsenter unshare timeout python3
}

qos_hosts_up() {
  veth_hosts_up "hq-$1" "fabric:$addr_a:$addr_b"
  local ns err
  for ns in "$ns_a" "$ns_b"; do
    # shellcheck disable=SC2086 # the tbf parameters are words
    err=$(ip netns exec "$ns" tc qdisc add dev fabric root tbf $qos_tbf 2>&1) \
      || skip "tc's tbf qdisc ($err)" "load the sch_tbf kernel module (modprobe sch_tbf)"
  done
}

qos_cleanup() {
  local pid
  for pid in "${tenant_pids[@]}"; do kill "$pid" 2> /dev/null; done
  veth_hosts_down
  if [ -n "${QOS_KEEP:-}" ]; then echo "$name: kept $dir"; else rm -rf "$dir"; fi
}

qos_start() {
  qos_require
  dir=$(mktemp -d)
  tenant_pids=() tenant_names=()
  trap qos_cleanup EXIT
  qos_hosts_up "$1"
  veth_hosts_wrapper "$dir/rank.sh" "$addr_a"
  echo "$name: hosts $ns_a ($addr_a) and $ns_b ($addr_b), each end shaped: tbf $qos_tbf"
  unset HCOMM_TRANSPORT HCOMM_ALGO HCOMM_HOST_ID HCOMM_QOS HCOMM_LINK_GBPS HCOMM_SOCKET_IFNAME \
    HCOMM_SPIN_US
  # No calibration: sendrecv has no algorithm to choose, and calibrating (1 MiB ping-pongs, in
  # the default class until --qos applies) over a link the other tenants already fill took
  # seconds, spreading the tenants' starts over 2-5 s instead of ~0.3 s.
  export HCOMM_CONNECT_TIMEOUT_MS=20000 HCOMM_CALIBRATE=0
}

qos_tenant() {
  local tname=$1 port=$2 secs=$3
  shift 3
  local vars=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  local limit
  limit=$(python3 -c "import math; print(math.ceil($secs) + 30)")
  env "${vars[@]}" timeout $((limit + 10)) "$run" -n 2 --port "$port" --timeout "$limit" \
    "$dir/rank.sh" "$bench" "$@" -T "$secs" -J "$dir/$tname.json" > "$dir/$tname.log" 2>&1 &
  tenant_pids+=($!)
  tenant_names+=("$tname")
}

qos_wait() {
  local i rc bad=0
  for i in "${!tenant_pids[@]}"; do
    rc=0
    wait "${tenant_pids[$i]}" || rc=$?
    if [ "$rc" -ne 0 ]; then
      echo "---- tenant ${tenant_names[$i]} exited $rc:"
      cat "$dir/${tenant_names[$i]}.log"
      bad=1
    fi
  done
  tenant_pids=() tenant_names=()
  [ "$bad" -eq 0 ] || fail "a tenant failed (see above)"
}

analyze() {
  python3 "$qos_here/qos_analyze.py" "$@"
}

qos_measure_link() {
  qos_tenant link 29690 3 -- sendrecv -b 4M -w 2 -c 0
  qos_wait
  link_gbps=$(analyze rate "$dir/link.json") || fail "no rate in $dir/link.json"
  echo "$name: link: $link_gbps Gbit/s of payload each way (one tenant, no class and no" \
    "HCOMM_LINK_GBPS: hcomm paces nothing)"
}
