# shellcheck shell=bash
# Sourced by the chaos tests that need two hosts: two network namespaces joined by TWO veth
# pairs, as hosts with a fabric and a management network:
#
#     host A (namespace $ns_a)                          host B (namespace $ns_b)
#     fabric 10.78.0.1/24  <==== veth pair "fabric" ====>  fabric 10.78.0.2/24
#     mgmt   10.79.0.1/24  <==== veth pair "mgmt"   ====>  mgmt   10.79.0.2/24
#
# One HCOMM_SOCKET_IFNAME (fabric) and one HCOMM_FALLBACK_IFNAME (mgmt) serve every rank; the
# namespaces and pairs are made by tests/netns/veth_hosts.sh.
#
# The caller sets $name and defines fail() first; skip() comes from tests/skip.sh. Functions:
#   two_hosts_require        skips (77; fails under CI) unless root with ip, nsenter, unshare,
#                            nft and timeout
#   tx_bytes NS IFACE        bytes sent so far on IFACE in namespace NS
#   two_hosts_start TAG      all a fabric-fault test needs first (the caller sets $name): the
#                            two hosts hc-TAG-a and hc-TAG-b ($ns_a, $ns_b), $dir (removed at
#                            exit with the hosts), the rank wrapper $dir/rank.sh (even ranks on
#                            host A, odd on B, rendezvous on A's management address),
#                            $dir/drop-fabric.nft (drops the fabric both ways in the namespace
#                            that loads it) and the environment that puts the primary links on
#                            the fabric and the fallback on the management network
#   chaos_digest LOG         the digest of hcomm-chaos' results in LOG (fails the test without)
# shellcheck source=../skip.sh
. "$(dirname "${BASH_SOURCE[0]}")/../skip.sh"
# shellcheck source=../netns/veth_hosts.sh
. "$(dirname "${BASH_SOURCE[0]}")/../netns/veth_hosts.sh"
fabric_a=10.78.0.1 fabric_b=10.78.0.2
mgmt_a=10.79.0.1 mgmt_b=10.79.0.2

two_hosts_require() {
  require_root "to create network namespaces"
  require_tools ip nsenter unshare nft timeout
}

tx_bytes() {
  ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_bytes"
}

two_hosts_start() {
  two_hosts_require
  dir=$(mktemp -d)
  # The nftables table lives in host A's namespace and goes with it.
  trap 'veth_hosts_down; rm -rf "$dir"' EXIT
  veth_hosts_up "hc-$1" "fabric:$fabric_a:$fabric_b" "mgmt:$mgmt_a:$mgmt_b"
  veth_hosts_wrapper "$dir/rank.sh" "$mgmt_a"
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
