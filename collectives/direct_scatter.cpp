// Direct scatter: the root sends block i straight to rank i, all at once; the root's link
// bandwidth is the bound however the blocks travel, so no tree is needed. In place means the
// root's recv is its own block of send.
#include "collectives/algorithms.hpp"
#include "collectives/blocks.hpp"

namespace hcomm::collectives {

void DirectScatter::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t esize = dtype_size(op.dtype), block = op.count * esize;
  if (block == 0) return;
  if (ctx.rank != op.root) {
    recv_chunks(s, ctx, esize, op.root, 0, op.recv, block, static_cast<size_t>(ctx.rank) * block);
    return;
  }
  const Block mine = send_block(op, op.root);
  if (op.recv != op.send + mine.offset) s.copy(op.recv, op.send + mine.offset, mine.bytes);
  for (int i = 0; i < ctx.size; ++i) {
    if (i == op.root) continue;
    const Block out = send_block(op, i);
    send_chunks(s, ctx, esize, i, 0, op.send + out.offset, out.bytes, out.offset);
  }
}

}  // namespace hcomm::collectives
