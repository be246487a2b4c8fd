// Ring allgather(v) around the ring order (PlanContext::ring_order): at step s the rank at
// position p forwards the block of the rank at position p-s to the rank at p+1 and receives the
// block of the rank at p-s-1 from the rank at p-1, chunk by chunk; a received chunk is forwarded as
// soon as it has landed. Blocks stay indexed by rank (block i comes from rank i). Every link
// carries each block once: bandwidth optimal. In place means send is this rank's own block of recv
// (NCCL's convention); otherwise the own block is copied.
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/blocks.hpp"

namespace hcomm::collectives {

void RingAllgather::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const int n = ctx.size, r = ctx.rank;
  const size_t esize = dtype_size(op.dtype);
  const Block mine = recv_block(op, r);
  std::byte* own = op.recv + mine.offset;
  if (mine.bytes > 0 && op.send != own) s.copy(own, op.send, mine.bytes);
  if (n == 1) return;
  const int p = ctx.position_of(r);
  const int right = ctx.rank_at(p + 1), left = ctx.rank_at(p - 1);
  // landed[b][c]: the receive of chunk c of block b, which its forwarding waits for.
  std::vector<std::vector<Schedule::Id>> landed(static_cast<size_t>(n));
  for (int st = 0; st < n - 1; ++st) {
    const int sb = ctx.rank_at(p - st), rb = ctx.rank_at(p - st - 1);  // blocks: ranks
    const Block out = recv_block(op, sb), in = recv_block(op, rb);
    const auto out_chunks = split_chunks(0, out.bytes, ctx.chunk_bytes, esize);
    for (size_t c = 0; c < out_chunks.size(); ++c) {
      auto [off, bytes] = out_chunks[c];
      const std::byte* from = st == 0 ? op.send + off : op.recv + out.offset + off;
      Schedule::Id send = s.send(right, static_cast<uint32_t>(st), static_cast<uint32_t>(c), from,
                                 bytes, out.offset + off);
      if (st > 0) s.order(landed[static_cast<size_t>(sb)][c], send);
    }
    const auto in_chunks = split_chunks(0, in.bytes, ctx.chunk_bytes, esize);
    for (size_t c = 0; c < in_chunks.size(); ++c) {
      auto [off, bytes] = in_chunks[c];
      landed[static_cast<size_t>(rb)].push_back(
          s.recv(left, static_cast<uint32_t>(st), static_cast<uint32_t>(c),
                 op.recv + in.offset + off, bytes, in.offset + off));
    }
  }
}

}  // namespace hcomm::collectives
