// Pipelined chain reduce: the chain runs through the ring order (PlanContext::ring_order) from the
// position after the root's all the way round to the root; each rank adds its contribution to
// chunk k as it passes and forwards the partial sum while chunk k+1 arrives. Every link carries
// the data once: bandwidth optimal for large messages.
#include "collectives/algorithms.hpp"
#include "collectives/tree.hpp"

namespace hcomm::collectives {

void ChainReduce::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t total = op.count * dtype_size(op.dtype);
  if (total == 0) return;
  // The chain from the root backwards: data flows from position to position + 1, as around a
  // ring.
  const TreeLinks links = chain_links(ctx, op.root, -1);
  std::byte* partial = links.parent >= 0 && !links.children.empty() ? s.scratch(total) : nullptr;
  reduce_range(s, op, ctx, links, 0, 0, total, partial);
}

}  // namespace hcomm::collectives
