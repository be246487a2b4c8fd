// Direct scatter: the root sends block i straight to rank i, all at once; the root's link
// bandwidth is the bound however the blocks travel, so no tree is needed. In place means the
// root's recv is its own block of send.
#include "collectives/algorithms.hpp"
#include "collectives/blocks.hpp"

namespace hcomm::coll {

void DirectScatter::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t esize = dtype_size(op.dtype), block = op.count * esize;
  if (block == 0) return;
  if (ctx.rank != op.root) {
    const auto chunks = split_chunks(0, block, ctx.chunk_bytes, esize);
    const size_t at = static_cast<size_t>(ctx.rank) * block;
    for (size_t c = 0; c < chunks.size(); ++c) {
      auto [off, bytes] = chunks[c];
      s.recv(op.root, 0, static_cast<uint32_t>(c), op.recv + off, bytes, at + off);
    }
    return;
  }
  const Block mine = send_block(op, op.root);
  if (op.recv != op.send + mine.offset) s.copy(op.recv, op.send + mine.offset, mine.bytes);
  for (int i = 0; i < ctx.size; ++i) {
    if (i == op.root) continue;
    const Block out = send_block(op, i);
    const auto chunks = split_chunks(out.offset, out.bytes, ctx.chunk_bytes, esize);
    for (size_t c = 0; c < chunks.size(); ++c) {
      auto [off, bytes] = chunks[c];
      s.send(i, 0, static_cast<uint32_t>(c), op.send + off, bytes, off);
    }
  }
}

}  // namespace hcomm::coll
