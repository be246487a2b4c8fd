# shellcheck shell=bash
# Sourced by the chaos tests that need two hosts: two network namespaces joined by TWO veth
# pairs, as hosts with a fabric and a management network:
#
#     host A (namespace $ns_a)                          host B (namespace $ns_b)
#     fabric 10.78.0.1/24  <==== veth pair "fabric" ====>  fabric 10.78.0.2/24
#     mgmt   10.79.0.1/24  <==== veth pair "mgmt"   ====>  mgmt   10.79.0.2/24
#
# Both ends of a pair have the same name, each in its own namespace, so one HCOMM_SOCKET_IFNAME
# (fabric) and one HCOMM_FALLBACK_IFNAME (mgmt) serve every rank. The pairs exist only inside the
# namespaces, so parallel runs with the same addresses do not clash.
#
# The caller defines skip() and fail() first. Functions:
#   two_hosts_require        skips (77) unless root with ip, nsenter, unshare, nft and timeout
#   two_hosts_up TAG         creates the namespaces hc-TAG-a and hc-TAG-b and the wiring; sets
#                            ns_a, ns_b; waits (bounded) for carrier on every end
#   two_hosts_down           removes them (idempotent: safe in an EXIT trap)
#   two_hosts_wrapper FILE   writes a rank wrapper for hcomm-run: rank r runs on host A when r
#                            is even, B when odd, in that namespace (nsenter --net, so that the
#                            mount namespace, part of hcomm's host identity, stays shared as in
#                            netns_hosts.sh) with its own UTS hostname; the rendezvous root is
#                            rank 0's management address with the port hcomm-run chose
#   tx_bytes NS IFACE        bytes sent so far on IFACE in namespace NS
#   two_hosts_start TAG      all a fabric-fault test needs first (the caller sets $name): the
#                            two hosts, $dir (removed at exit with the hosts), the wrapper
#                            $dir/rank.sh, $dir/drop-fabric.nft (drops the fabric both ways in
#                            the namespace that loads it) and the environment that puts the
#                            primary links on the fabric and the fallback on the management
#                            network
#   chaos_digest LOG         the digest of hcomm-chaos' results in LOG (fails the test without)
fabric_a=10.78.0.1 fabric_b=10.78.0.2
mgmt_a=10.79.0.1 mgmt_b=10.79.0.2

two_hosts_require() {
  [ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
  local tool
  for tool in ip nsenter unshare nft timeout; do
    command -v "$tool" > /dev/null || skip "'$tool' is not installed"
  done
}

two_hosts_up() {
  ns_a=hc-$1-a ns_b=hc-$1-b
  local err
  err=$(ip netns add "$ns_a" 2>&1) || skip "ip netns add failed: $err"
  ip netns add "$ns_b" || fail "ip netns add $ns_b failed"
  ip link add fabric netns "$ns_a" type veth peer name fabric netns "$ns_b" \
    || fail "cannot create the fabric veth pair"
  ip link add mgmt netns "$ns_a" type veth peer name mgmt netns "$ns_b" \
    || fail "cannot create the management veth pair"
  ip -n "$ns_a" addr add "$fabric_a/24" dev fabric && ip -n "$ns_b" addr add "$fabric_b/24" dev fabric \
    && ip -n "$ns_a" addr add "$mgmt_a/24" dev mgmt && ip -n "$ns_b" addr add "$mgmt_b/24" dev mgmt \
    || fail "cannot address the veth ends"
  local ns dev
  for ns in "$ns_a" "$ns_b"; do
    for dev in lo fabric mgmt; do ip -n "$ns" link set "$dev" up || fail "$dev up in $ns"; done
  done
  # Every end reports carrier (state UP) within 5 s.
  local _ all
  for _ in $(seq 1 50); do
    all=1
    for ns in "$ns_a" "$ns_b"; do
      for dev in fabric mgmt; do
        ip -n "$ns" link show "$dev" | grep -q "state UP" || all=0
      done
    done
    [ "$all" -eq 1 ] && return 0
    sleep 0.1
  done
  fail "the veth pairs did not come up: $(ip -n "$ns_a" link)"
}

two_hosts_down() {
  [ -n "${ns_a:-}" ] && ip netns del "$ns_a" 2> /dev/null
  [ -n "${ns_b:-}" ] && ip netns del "$ns_b" 2> /dev/null
  return 0
}

two_hosts_wrapper() {
  cat > "$1" << EOF
#!/usr/bin/env bash
if [ \$((HCOMM_RANK % 2)) -eq 0 ]; then ns=$ns_a host=hostA; else ns=$ns_b host=hostB; fi
export HCOMM_ROOT_ADDR=$mgmt_a:\${HCOMM_ROOT_ADDR##*:}
exec nsenter --net=/run/netns/\$ns unshare --uts bash -c 'hostname "\$0" && exec "\$@"' \\
  "\$host" "\$@"
EOF
  chmod +x "$1"
}

tx_bytes() {
  ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_bytes"
}

two_hosts_start() {
  two_hosts_require
  dir=$(mktemp -d)
  # The nftables table lives in host A's namespace and goes with it.
  trap 'two_hosts_down; rm -rf "$dir"' EXIT
  two_hosts_up "$1"
  two_hosts_wrapper "$dir/rank.sh"
  echo "$name: hosts $ns_a and $ns_b; fabric $fabric_a<->$fabric_b, management $mgmt_a<->$mgmt_b"
  cat > "$dir/drop-fabric.nft" << 'EOF'
table inet chaos {
  chain in { type filter hook input priority 0; iifname "fabric" drop; }
  chain out { type filter hook output priority 0; oifname "fabric" drop; }
}
EOF
  unset HCOMM_TRANSPORT HCOMM_ALGO HCOMM_HOST_ID HCOMM_FAILOVER
  export HCOMM_SOCKET_IFNAME=fabric HCOMM_FALLBACK_IFNAME=mgmt HCOMM_CONNECT_TIMEOUT_MS=20000
}

chaos_digest() {
  local digest
  digest=$(sed -n 's/^\[0\] # digest: \([0-9a-f]\{16\}\).*/\1/p' "$1")
  [ -n "$digest" ] || { cat "$1"; fail "no digest in hcomm-chaos' output ($1)"; }
  echo "$digest"
}
