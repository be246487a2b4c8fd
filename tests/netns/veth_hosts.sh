# shellcheck shell=bash
# Sourced by the tests that run ranks on two "hosts": network namespaces joined by veth pairs
# (tests/chaos/two_hosts.sh, tests/qos/qos_hosts.sh). Both ends of a pair have the same name,
# each in its own namespace, so one interface name serves every rank. The pairs exist only
# inside the namespaces, so parallel runs with the same addresses do not clash.
#
# The caller defines fail() and sources tests/skip.sh (skip()) first. Functions:
#   veth_hosts_up NS_PREFIX IFACE:ADDR_A:ADDR_B...
#                            creates the namespaces NS_PREFIX-a and NS_PREFIX-b (sets ns_a, ns_b)
#                            and one veth pair IFACE per argument, ADDR_A/24 on host A's end and
#                            ADDR_B/24 on B's; turns on receive packet steering on every end
#                            (flows stay in order); brings every end and lo up and waits (5 s at
#                            most) for carrier on every end
#   veth_hosts_down          removes both namespaces (idempotent: safe in an EXIT trap)
#   veth_hosts_wrapper FILE ROOT_ADDR
#                            writes a rank wrapper for hcomm-run: rank r runs on host A when r is
#                            even, B when odd, in that namespace (nsenter --net, so that the
#                            mount namespace, part of hcomm's host identity, stays shared as in
#                            tests/integration/netns_hosts.sh) with its own UTS hostname; the
#                            rendezvous root is ROOT_ADDR with the port hcomm-run chose

veth_hosts_up() {
  ns_a=$1-a ns_b=$1-b
  shift
  local err pair iface addr_a addr_b ns
  local ifaces=()
  local how="run it as root where network namespaces can be made (not in an unprivileged container)"
  without netns && skip "a network namespace (HCOMM_TEST_WITHOUT names netns)" "$how"
  err=$(ip netns add "$ns_a" 2>&1) || skip "a network namespace ('ip netns add' failed: $err)" "$how"
  ip netns add "$ns_b" || fail "ip netns add $ns_b failed"
  for pair in "$@"; do
    IFS=: read -r iface addr_a addr_b <<< "$pair"
    ifaces+=("$iface")
    ip link add "$iface" netns "$ns_a" type veth peer name "$iface" netns "$ns_b" \
      || fail "cannot create the $iface veth pair"
    ip -n "$ns_a" addr add "$addr_a/24" dev "$iface" || fail "cannot address host A's $iface"
    ip -n "$ns_b" addr add "$addr_b/24" dev "$iface" || fail "cannot address host B's $iface"
  done
  for ns in "$ns_a" "$ns_b"; do
    for iface in lo "${ifaces[@]}"; do
      ip -n "$ns" link set "$iface" up || fail "$iface up in $ns"
    done
  done
  # Receive packet steering on every end: a veth end hands each packet to the backlog of the CPU
  # that sent it, so a flow whose sends move between threads on different CPUs (hcomm's driving
  # caller and its engine thread) arrives out of order, and TCP takes the reordering for loss
  # (fast retransmits, a collapsing window: 64 MiB allreduces 2-4x slower). RPS keeps each flow
  # on one CPU by its hash, as a NIC's RSS does. Best effort: skipped where sysfs refuses, and
  # with VETH_RPS=0 (to measure without it).
  local mask
  mask=$(printf '%x' $(((1 << $(nproc)) - 1)))
  [ "${VETH_RPS:-1}" = 0 ] && mask=0
  for ns in "$ns_a" "$ns_b"; do
    for iface in "${ifaces[@]}"; do
      ip netns exec "$ns" sh -c "echo $mask > /sys/class/net/$iface/queues/rx-0/rps_cpus" \
        2> /dev/null || true
    done
  done
  local _ all
  for _ in $(seq 1 50); do
    all=1
    for ns in "$ns_a" "$ns_b"; do
      for iface in "${ifaces[@]}"; do
        ip -n "$ns" link show "$iface" | grep -q "state UP" || all=0
      done
    done
    [ "$all" -eq 1 ] && return 0
    sleep 0.1
  done
  fail "the veth pairs did not come up: $(ip -n "$ns_a" link)"
}

veth_hosts_down() {
  [ -n "${ns_a:-}" ] && ip netns del "$ns_a" 2> /dev/null
  [ -n "${ns_b:-}" ] && ip netns del "$ns_b" 2> /dev/null
  return 0
}

veth_hosts_wrapper() {
  cat > "$1" << EOF
#!/usr/bin/env bash
if [ \$((HCOMM_RANK % 2)) -eq 0 ]; then ns=$ns_a host=hostA; else ns=$ns_b host=hostB; fi
export HCOMM_ROOT_ADDR=$2:\${HCOMM_ROOT_ADDR##*:}
exec nsenter --net=/run/netns/\$ns unshare --uts bash -c 'hostname "\$0" && exec "\$@"' \\
  "\$host" "\$@"
EOF
  chmod +x "$1"
}
