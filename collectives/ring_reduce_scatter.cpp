// Ring reduce-scatter around the ring order (PlanContext::ring_order): at step s the rank at
// position p sends the partial sum of the block of the rank at position p-s-1 to the rank at p+1
// and receives that of the rank at p-s-2 from the rank at p-1, adding its own contribution as the
// chunks arrive, so that rank i ends with block i. Partial sums wait in scratch memory (one block
// per step, so no step overwrites a block still being sent); the last step writes the result. In
// place means recv == send + r * block (NCCL's convention) or send == recv (see
// reduce_scatter_result).
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/blocks.hpp"

namespace hcomm::collectives {

void RingReduceScatter::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const int n = ctx.size, r = ctx.rank;
  const size_t esize = dtype_size(op.dtype);
  const size_t block = op.count * esize;
  if (block == 0) return;
  std::byte* const result = reduce_scatter_result(op, r);
  const auto chunks = split_chunks(0, block, ctx.chunk_bytes, esize);
  std::vector<Schedule::Id> last(chunks.size(), Schedule::kNone);
  if (n == 1) {
    if (op.send != result) s.copy(result, op.send, block);
  } else {
    const int p = ctx.position_of(r);
    const int right = ctx.rank_at(p + 1), left = ctx.rank_at(p - 1);
    std::byte* scratch = n > 2 ? s.scratch(static_cast<size_t>(n - 2) * block) : nullptr;
    for (int st = 0; st < n - 1; ++st) {
      // Blocks are indexed by rank: the last step receives block rank_at(p - n) = r.
      const size_t sblk = static_cast<size_t>(ctx.rank_at(p - st - 1)) * block;
      const size_t rblk = static_cast<size_t>(ctx.rank_at(p - st - 2)) * block;
      std::byte* partial_in = st == 0 ? nullptr : scratch + static_cast<size_t>(st - 1) * block;
      std::byte* partial_out = st == n - 2 ? result : scratch + static_cast<size_t>(st) * block;
      for (size_t c = 0; c < chunks.size(); ++c) {
        auto [off, bytes] = chunks[c];
        const std::byte* from = st == 0 ? op.send + sblk + off : partial_in + off;
        Schedule::Id send = s.send(right, static_cast<uint32_t>(st), static_cast<uint32_t>(c), from,
                                   bytes, sblk + off);
        s.order(last[c], send);
        last[c] = s.recv_reduce(left, static_cast<uint32_t>(st), static_cast<uint32_t>(c),
                                partial_out + off, op.send + rblk + off, bytes, rblk + off);
      }
    }
  }
  if (op.redop == ReduceOp::avg) {
    for (size_t c = 0; c < chunks.size(); ++c) {
      auto [off, bytes] = chunks[c];
      Schedule::Id id = s.average(result + off, bytes);
      s.order(last[c], id);
    }
  }
}

}  // namespace hcomm::collectives
