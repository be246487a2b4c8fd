// Binomial tree broadcast: in round k every rank that has the data sends it 2^k ranks further,
// so ceil(log2 n) rounds reach everyone, each message the whole buffer (cut in chunks only to
// bound the frame size). Fewest rounds: small messages.
#include "collectives/algorithms.hpp"
#include "collectives/tree.hpp"

namespace hcomm::collectives {

void BinomialBroadcast::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t total = op.count * dtype_size(op.dtype);
  if (total == 0) return;
  if (ctx.rank == op.root && op.send != op.recv) s.copy(op.recv, op.send, total);
  broadcast_range(s, op, ctx, binomial_links(ctx.rank, op.root, ctx.size), 0, 0, total);
}

}  // namespace hcomm::collectives
