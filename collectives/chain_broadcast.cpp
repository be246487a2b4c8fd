// Pipelined chain broadcast: ranks form a chain starting at the root and following the ring order
// (PlanContext::ring_order: topology-aware, so the chain crosses each host or switch boundary
// once); each rank receives chunk k from its predecessor and forwards it to its successor while
// chunk k+1 is arriving. Every link carries the data once; latency is n-1 hops for the first
// chunk.
#include "collectives/algorithms.hpp"
#include "collectives/tree.hpp"

namespace hcomm::collectives {

void ChainBroadcast::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t total = op.count * dtype_size(op.dtype);
  if (total == 0) return;
  if (ctx.rank == op.root && op.send != op.recv) s.copy(op.recv, op.send, total);
  broadcast_range(s, op, ctx, chain_links(ctx, op.root, +1), 0, 0, total);
}

}  // namespace hcomm::collectives
