#!/usr/bin/env bash
# tile_pipeline_cut: the tile pipeline (examples/tile_pipeline.cpp, a CAF application over the
# communicator actor) on two hosts with a fabric and a management network (two_hosts.sh), one
# rank each; the fabric is cut for 3 s mid-run.
#
# 1. A fault-free run gives the digest of the result (checked against the one-thread reference,
#    --verify) and the run's time; under 12 s, it is made again with more stages (the run must
#    outlast the cut and the failback after it).
# 2. The same run while host A's fabric is dropped (nftables) from 3 s to 6 s after its start:
#    the digest must equal the fault-free one; each rank must print the failover notification it
#    got as a message, what it rescheduled, and the failback with its plan restored; rank 0
#    prints the delay the cut added (against the fault-free time, --baseline-ms).
# Needs root, ip netns, nsenter, unshare, nft; otherwise skipped (77), or failed under CI.
# ~35 s.
#
# Usage: tile_pipeline_cut.sh HCOMM_RUN EXAMPLE_TILE_PIPELINE
set -u
run=$1 example=$2
here=$(cd "$(dirname "$0")" && pwd)
name=tile_pipeline_cut

fail() { echo "$name: FAIL: $*" >&2; exit 1; }
# shellcheck source=two_hosts.sh
. "$here/two_hosts.sh"

two_hosts_start "tile$$"
# The keep-alive of the chaos tests: the cut is noticed within ~1 s.
export HCOMM_KEEPALIVE_TIMEOUT_MS=800
workload=(--stages "${TILE_STAGES:-2000}")

# fault_free: the run without faults, its digest and time ($digest, $clean_ms).
fault_free() {
  timeout 200 "$run" -n 2 --timeout 180 "$dir/rank.sh" "$example" "${workload[@]}" --verify \
    > "$dir/clean.log" 2>&1 || { cat "$dir/clean.log"; fail "the fault-free run failed"; }
  cat "$dir/clean.log"
  grep -q "VERIFIED against the one-thread reference" "$dir/clean.log" \
    || fail "the fault-free run's result differs from the one-thread reference"
  digest=$(sed -n 's/.*tile_pipeline: .* ms; digest \([0-9a-f]\{16\}\)$/\1/p' "$dir/clean.log")
  clean_ms=$(sed -n 's/.*on 2 ranks in \([0-9]*\) ms; digest.*/\1/p' "$dir/clean.log")
  [ -n "$digest" ] && [ -n "$clean_ms" ] || fail "no digest or time in the fault-free run's output"
}
echo "$name: 1. fault-free run"
fault_free
# The run must outlast the cut and the failback after it (~2 s after the cut ends): on a faster
# machine it gets more stages, and a fault-free run of those.
if [ "$clean_ms" -lt 12000 ]; then
  stages=$(( (${TILE_STAGES:-2000} * 12000 / clean_ms + 499) / 500 * 500 ))
  echo "$name: the run took $clean_ms ms, under the 12 s the cut needs: again with $stages stages"
  workload=(--stages "$stages")
  fault_free
fi

echo "$name: 2. host A's fabric dropped from 3 s to 6 s"
timeout 200 "$run" -n 2 --timeout 180 "$dir/rank.sh" "$example" "${workload[@]}" \
  --baseline-ms "$clean_ms" > "$dir/cut.log" 2>&1 &
job=$!
sleep 3
ip netns exec "$ns_a" nft -f "$dir/drop-fabric.nft" || fail "cannot load the nftables table"
sleep 3
ip netns exec "$ns_a" nft delete table inet chaos
wait "$job"
rc=$?
cat "$dir/cut.log"
[ "$rc" -eq 0 ] || fail "the run under the cut failed (exit $rc)"
grep -q "digest $digest\$" "$dir/cut.log" || fail "the result under the cut differs from the fault-free one"
for r in 0 1; do
  grep -qE "^\[$r\] rank $r: link event: failover, rank $((1 - r)): tcp -> tcp-fallback" "$dir/cut.log" \
    || fail "rank $r printed no failover notification"
  grep -qE "^\[$r\] rank $r: rescheduled for the failover to rank $((1 - r)): " "$dir/cut.log" \
    || fail "rank $r printed no rescheduling"
  grep -qE "^\[$r\] rank $r: link event: failback, rank $((1 - r)): tcp-fallback -> tcp" "$dir/cut.log" \
    || fail "rank $r printed no failback notification"
  grep -qE "^\[$r\] rank $r: plan restored on the failback of rank $((1 - r))" "$dir/cut.log" \
    || fail "rank $r did not restore its plan"
done
grep -qE "^\[0\] tile_pipeline: the fault added -?[0-9]+ ms to the run" "$dir/cut.log" \
  || fail "rank 0 did not report the delay the cut added"
echo "$name: ok"
