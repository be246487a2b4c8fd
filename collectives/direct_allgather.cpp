// Direct allgather(v): every rank sends its block to every other rank and receives theirs, all
// posted at once: one round of latency, n-1 messages per rank. For small blocks, where the ring's
// n-1 sequential steps cost more than the extra connections.
#include "collectives/algorithms.hpp"
#include "collectives/blocks.hpp"

namespace hcomm::coll {

void DirectAllgather::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const int n = ctx.size, r = ctx.rank;
  const size_t esize = dtype_size(op.dtype);
  const Block mine = recv_block(op, r);
  if (mine.bytes > 0 && op.send != op.recv + mine.offset)
    s.copy(op.recv + mine.offset, op.send, mine.bytes);
  const auto out_chunks = split_chunks(0, mine.bytes, ctx.chunk_bytes, esize);
  for (int k = 1; k < n; ++k) {
    const int to = (r + k) % n, from = (r - k + n) % n;
    for (size_t c = 0; c < out_chunks.size(); ++c) {
      auto [off, bytes] = out_chunks[c];
      s.send(to, 0, static_cast<uint32_t>(c), op.send + off, bytes, mine.offset + off);
    }
    const Block in = recv_block(op, from);
    const auto in_chunks = split_chunks(in.offset, in.bytes, ctx.chunk_bytes, esize);
    for (size_t c = 0; c < in_chunks.size(); ++c) {
      auto [off, bytes] = in_chunks[c];
      s.recv(from, 0, static_cast<uint32_t>(c), op.recv + off, bytes, off);
    }
  }
}

}  // namespace hcomm::coll
