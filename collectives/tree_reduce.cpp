// Double binary tree reduce: each half of the buffer is reduced up its own binary tree over the
// non-root ranks, whose two roots hand the halves to the operation's root
// (rooted_double_tree_links). Most interior ranks of one tree are leaves of the other, so each
// rank sends about one buffer's worth while the depth stays log2(n); chunks pipeline.
#include "collectives/algorithms.hpp"
#include "collectives/tree.hpp"

namespace hcomm::collectives {

void TreeReduce::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t esize = dtype_size(op.dtype), total = op.count * esize;
  if (total == 0) return;
  const size_t half = op.count / 2 * esize;
  std::byte* partial = ctx.rank != op.root ? s.scratch(total) : nullptr;
  for (int tree = 0; tree < 2; ++tree) {
    const TreeLinks links = rooted_double_tree_links(tree, ctx.rank, op.root, ctx.size);
    reduce_range(s, op, ctx, links, static_cast<uint32_t>(tree), tree == 0 ? 0 : half,
                 tree == 0 ? half : total - half, partial);
  }
}

}  // namespace hcomm::collectives
