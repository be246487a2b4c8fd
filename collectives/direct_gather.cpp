// Direct gather: every rank sends its block straight to the root, which posts all receives at
// once; the root's link bandwidth is the bound however the blocks travel, so no tree is needed.
// In place means the root's send is its own block of recv.
#include "collectives/algorithms.hpp"
#include "collectives/blocks.hpp"

namespace hcomm::coll {

void DirectGather::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t esize = dtype_size(op.dtype);
  const Block mine = recv_block(op, ctx.rank);
  if (mine.bytes == 0) return;
  if (ctx.rank != op.root) {
    const auto chunks = split_chunks(0, mine.bytes, ctx.chunk_bytes, esize);
    for (size_t c = 0; c < chunks.size(); ++c) {
      auto [off, bytes] = chunks[c];
      s.send(op.root, 0, static_cast<uint32_t>(c), op.send + off, bytes, mine.offset + off);
    }
    return;
  }
  if (op.send != op.recv + mine.offset) s.copy(op.recv + mine.offset, op.send, mine.bytes);
  for (int i = 0; i < ctx.size; ++i) {
    if (i == op.root) continue;
    const Block in = recv_block(op, i);
    const auto chunks = split_chunks(in.offset, in.bytes, ctx.chunk_bytes, esize);
    for (size_t c = 0; c < chunks.size(); ++c) {
      auto [off, bytes] = chunks[c];
      s.recv(i, 0, static_cast<uint32_t>(c), op.recv + off, bytes, off);
    }
  }
}

}  // namespace hcomm::coll
