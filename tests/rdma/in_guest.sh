#!/usr/bin/env bash
# The RDMA tests, run inside the soft-RoCE guest by the ctest rdma_tests (vm_test.sh): every
# check prints PASS/FAIL and this script exits non-zero if any failed. Rank r of a 2-rank world uses rxe<r>, so the two
# ranks talk RoCEv2 across the guest's veth pair (HCOMM_TRANSPORT=rdma: they share a host, which
# would otherwise pick shared memory).
# Usage: in_guest.sh BUILD_DIR
set -u
build=$1
run="$build/tools/hcomm-run"
failed=0
step() { echo; echo "==== $*"; }
result() {  # result NAME EXIT_CODE
  if [ "$2" -eq 0 ]; then echo "==== PASS $1"; else echo "==== FAIL $1 (exit $2)"; failed=1; fi
}
per_rank_device='export HCOMM_RDMA_DEVICE=rxe$HCOMM_RANK; exec "$0" "$@"'
export HCOMM_TRANSPORT=rdma

step "no-device errors"
"$build/tests/rdma/rdma_checks" nodevice
result nodevice $?

step "registration cache on rxe0 (ibv_reg_mr): hit, miss, eviction, explicit, invalidation"
"$build/tests/rdma/rdma_checks" cache rxe0
result mr_cache $?

step "HCOMM_ERR_MMAP when ulimit -l refuses a registration"
"$build/tests/rdma/rdma_checks" memlock rxe0
result memlock $?

step "hcomm-info: each rank's device and links, and the transport per pair"
HCOMM_DEBUG=INFO HCOMM_DEBUG_SUBSYS=NET "$run" -n 2 --timeout 120 bash -c "$per_rank_device" \
  "$build/tools/hcomm-info" 2>&1 | grep -E -A3 'rdma: opened|link up|transport per pair'
rc=${PIPESTATUS[0]}
result hcomm_info "$rc"

step "communicator checks over rdma: cache hit rate, unaligned fallback, register_memory"
"$run" -n 2 --timeout 200 bash -c "$per_rank_device" "$build/tests/rdma/rdma_checks" comm
result comm $?

step "hcomm-bench allreduce over rdma, 100 calls on the same buffers (the cache's hit rate)"
"$run" -n 2 --timeout 200 bash -c "$per_rank_device" "$build/tools/hcomm-bench" allreduce \
  -b 1M -e 1M -n 100 -w 0 | tee /tmp/bench.txt
rc=${PIPESTATUS[0]}
rate=$(sed -n 's/.*hit rate \([0-9.]*\)%.*/\1/p' /tmp/bench.txt)
grep -q 'transport (rank 0): rdma to 1 peer' /tmp/bench.txt || rc=1
awk -v r="${rate:-0}" 'BEGIN { exit !(r >= 99) }' || { echo "hit rate ${rate:-none} < 99%"; rc=1; }
result bench_hit_rate "$rc"

step "hcomm-bench over 4 striped queue pairs, static staging pool, every size checked"
HCOMM_NUM_QPS=4 HCOMM_RDMA_BUFFERS=static HCOMM_MAX_INLINE=64 \
  "$run" -n 2 --timeout 200 bash -c "$per_rank_device" "$build/tools/hcomm-bench" allreduce \
  -b 8 -e 2M -f 16 -n 5 -w 1
result bench_qps4_static $?

step "failover: RoCE (UDP 4791) dropped for 5 s mid-run -> tcp-fallback -> back to rdma"
bash "$(dirname "$0")/chaos_rdma.sh" "$build/tools"
result chaos_rdma $?

# Default chunks only: the 24-byte-chunk flavour pipelines the same schedules over many small
# frames, which the shared-memory and TCP matrix runs cover; in the guest it took over half the time.
step "collective matrix over rdma (2 ranks: rxe0, rxe1), default chunks"
HCOMM_DEBUG=INFO HCOMM_DEBUG_SUBSYS=NET \
  "$run" -n 2 --timeout 900 bash -c "$per_rank_device" "$build/tests/integration/collective_matrix" \
  --chunks default 2>&1 | grep -v -E 'link up|rdma: opened|closed its communicator' ; rc=${PIPESTATUS[0]}
result matrix_rdma "$rc"

echo
[ "$failed" -eq 0 ] && echo "==== all RDMA tests passed" || echo "==== some RDMA tests FAILED"
exit "$failed"
