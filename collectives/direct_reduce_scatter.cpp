// Direct reduce-scatter: every rank sends block i of its input to rank i, all at once, and adds
// the blocks arriving for it to its own, one sender after the other (the reductions share one
// destination). One round of latency: for small blocks. In place means recv == send + rank * block
// or send == recv, as for the ring (see reduce_scatter_result).
#include "collectives/algorithms.hpp"
#include "collectives/blocks.hpp"

namespace hcomm::collectives {

void DirectReduceScatter::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const int n = ctx.size, r = ctx.rank;
  const size_t esize = dtype_size(op.dtype);
  const Block mine = send_block(op, r);
  if (mine.bytes == 0) return;
  std::byte* const result = reduce_scatter_result(op, r);
  if (n == 1) {
    if (op.send != result) s.copy(result, op.send, mine.bytes);
    return;
  }
  const auto chunks = split_chunks(0, mine.bytes, ctx.chunk_bytes, esize);
  for (int k = 1; k < n; ++k) {
    const Block out = send_block(op, (r + k) % n);
    send_chunks(s, ctx, esize, (r + k) % n, 0, op.send + out.offset, out.bytes, out.offset);
  }
  for (size_t c = 0; c < chunks.size(); ++c) {
    auto [off, bytes] = chunks[c];
    const std::byte* sum = op.send + mine.offset + off;
    Schedule::Id last = Schedule::kNone;
    for (int k = 1; k < n; ++k) {
      Schedule::Id id = s.recv_reduce((r - k + n) % n, 0, static_cast<uint32_t>(c), result + off,
                                      sum, bytes, mine.offset + off);
      s.order(last, id);
      last = id;
      sum = result + off;
    }
    if (op.redop == ReduceOp::avg) s.order(last, s.average(result + off, bytes));
  }
}

}  // namespace hcomm::collectives
