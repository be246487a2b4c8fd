// Direct gather: every rank sends its block straight to the root, which posts all receives at
// once; the root's link bandwidth is the bound however the blocks travel, so no tree is needed.
// In place means the root's send is its own block of recv.
#include "collectives/algorithms.hpp"
#include "collectives/blocks.hpp"

namespace hcomm::collectives {

void DirectGather::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t esize = dtype_size(op.dtype);
  const Block mine = recv_block(op, ctx.rank);
  if (mine.bytes == 0) return;
  if (ctx.rank != op.root) {
    send_chunks(s, ctx, esize, op.root, 0, op.send, mine.bytes, mine.offset);
    return;
  }
  if (op.send != op.recv + mine.offset) s.copy(op.recv + mine.offset, op.send, mine.bytes);
  for (int i = 0; i < ctx.size; ++i) {
    if (i == op.root) continue;
    const Block in = recv_block(op, i);
    recv_chunks(s, ctx, esize, i, 0, op.recv + in.offset, in.bytes, in.offset);
  }
}

}  // namespace hcomm::collectives
