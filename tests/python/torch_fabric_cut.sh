#!/usr/bin/env bash
# DDP over the hcomm backend rides out a fabric cut: two namespace hosts with a fabric and a
# management network (tests/chaos/two_hosts.sh), one rank each, primary links on the fabric, the
# fallback and torch's store on the management network. python/tests_torch/ddp_fabric.py trains
# 500 steps (~12 s); once fault-free, once with host A's fabric dropped (nftables) from 2 s to
# 5 s. The run with the cut must finish, with final parameters identical to the fault-free run's
# (the digest), >= 1 failover and >= 1 failback on each rank and no peer lost.
# Needs root, ip netns, nsenter, unshare, nft (else skipped, 77; failed under CI).
# Usage: torch_fabric_cut.sh HCOMM_RUN PYTHON BUILD_DIR SOURCE_DIR
set -u
run=$1 python=$2 build=$3 src=$4
name=torch_fabric_cut
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
# shellcheck source=../chaos/two_hosts.sh
. "$src/tests/chaos/two_hosts.sh"
two_hosts_start "tfc$$"
export PYTHONPATH=$build/python
unset RANK WORLD_SIZE MASTER_ADDR MASTER_PORT

train() {  # LOG ARGS...
  local log=$1
  shift
  timeout 120 "$run" -n 2 --timeout 100 "$dir/rank.sh" "$python" \
    "$src/python/tests_torch/ddp_fabric.py" "$@" > "$log" 2>&1
}
field() { sed -n "s/^\[$2\] rank $2: .* $3 \([0-9a-f]*\).*/\1/p" "$1"; }

echo "$name: 1. fault-free"
train "$dir/clean.log" 500 || { cat "$dir/clean.log"; fail "the fault-free run failed"; }
grep -E "^\[[01]\] rank [01]: 500 steps" "$dir/clean.log"
digest=$(field "$dir/clean.log" 0 digest)
[ -n "$digest" ] || { cat "$dir/clean.log"; fail "no digest from rank 0"; }
[ "$(field "$dir/clean.log" 1 digest)" = "$digest" ] || fail "the ranks' parameters differ"

echo "$name: 2. host A's fabric dropped from 2 s to 5 s"
train "$dir/cut.log" 500 "$dir/drop-fabric.nft" 2 3 || { cat "$dir/cut.log"; fail "training with the cut failed"; }
grep -E "^\[[01]\] rank [01]: (500 steps|fabric)|now on" "$dir/cut.log"
grep -q "fabric back" "$dir/cut.log" || fail "the fault was not injected"
for r in 0 1; do
  [ "$(field "$dir/cut.log" $r digest)" = "$digest" ] \
    || fail "rank $r's final parameters differ from the fault-free run's"
  [ "$(field "$dir/cut.log" $r failovers)" -ge 1 ] || fail "rank $r never failed over"
  [ "$(field "$dir/cut.log" $r failbacks)" -ge 1 ] || fail "rank $r never failed back"
  [ "$(field "$dir/cut.log" $r lost)" = 0 ] || fail "rank $r lost its peer"
done
if ip netns exec "$ns_a" nft list tables | grep -q chaos; then fail "the nftables table is still there"; fi
echo "$name: ok (digest $digest both times)"
