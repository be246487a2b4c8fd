// Double binary tree allreduce (NCCL's): the buffer is halved and each half travels its own
// binary tree, whose interior ranks are mostly the other tree's leaves, so every rank sends and
// receives about one buffer's worth while the depth stays log2(n). Per chunk the half is reduced
// up to the tree's root (which averages, for avg) and broadcast back down; chunks pipeline, and
// every rank ends with the root's bits.
#include "collectives/algorithms.hpp"
#include "collectives/tree.hpp"

namespace hcomm::collectives {

void TreeAllreduce::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t esize = dtype_size(op.dtype);
  const size_t half = op.count / 2 * esize;
  const std::pair<size_t, size_t> halves[2] = {{0, half}, {half, op.count * esize - half}};
  for (int tree = 0; tree < 2; ++tree) {
    const TreeLinks links = double_tree_links(tree, ctx.rank, ctx.size);
    const uint32_t up = static_cast<uint32_t>(2 * tree), down = up + 1;
    const auto chunks =
        split_chunks(halves[tree].first, halves[tree].second, ctx.chunk_bytes, esize);
    for (size_t c = 0; c < chunks.size(); ++c) {
      auto [off, bytes] = chunks[c];
      const uint32_t chunk = static_cast<uint32_t>(c);
      // Interior ranks reduce into recv: it is overwritten by the result only after the partial
      // sum went up (broadcast_down orders its receive after `last`).
      Schedule::Id last = reduce_up(s, links, up, chunk, op.send + off, op.recv + off, bytes, off);
      if (links.parent < 0 && op.redop == ReduceOp::avg) {
        Schedule::Id avg = s.average(op.recv + off, bytes);
        s.order(last, avg);
        last = avg;
      }
      broadcast_down(s, links, down, chunk, op.recv + off, op.recv + off, bytes, off, last);
    }
  }
}

}  // namespace hcomm::collectives
