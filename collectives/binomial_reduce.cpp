// Binomial tree reduce: the mirror image of the binomial broadcast; in round k ranks whose
// (root-relative) number has bit k set send their partial result 2^k ranks down, so ceil(log2 n)
// rounds bring everything to the root, each message the whole buffer (chunked only to bound the
// frame size). Fewest rounds: small messages.
#include "collectives/algorithms.hpp"
#include "collectives/tree.hpp"

namespace hcomm::collectives {

void BinomialReduce::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t total = op.count * dtype_size(op.dtype);
  if (total == 0) return;
  const TreeLinks links = binomial_links(ctx.rank, op.root, ctx.size);
  std::byte* partial = links.parent >= 0 && !links.children.empty() ? s.scratch(total) : nullptr;
  reduce_range(s, op, ctx, links, 0, 0, total, partial);
}

}  // namespace hcomm::collectives
