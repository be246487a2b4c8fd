// Double binary tree broadcast: the root hands each half of the buffer to the root of its own
// binary tree over the other ranks (rooted_double_tree_links); since most interior ranks of one
// tree are leaves of the other, each rank forwards about one buffer's worth while the depth
// stays log2(n). Chunks pipeline down both trees.
#include "collectives/algorithms.hpp"
#include "collectives/tree.hpp"

namespace hcomm::collectives {

void TreeBroadcast::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t esize = dtype_size(op.dtype), total = op.count * esize;
  if (total == 0) return;
  if (ctx.rank == op.root && op.send != op.recv) s.copy(op.recv, op.send, total);
  const size_t half = op.count / 2 * esize;
  for (int tree = 0; tree < 2; ++tree) {
    const TreeLinks links = rooted_double_tree_links(tree, ctx.rank, op.root, ctx.size);
    broadcast_range(s, op, ctx, links, static_cast<uint32_t>(tree), tree == 0 ? 0 : half,
                    tree == 0 ? half : total - half);
  }
}

}  // namespace hcomm::collectives
