// Direct allgather(v): every rank sends its block to every other rank and receives theirs, all
// posted at once: one round of latency, n-1 messages per rank. For small blocks, where the ring's
// n-1 sequential steps cost more than the extra connections.
#include "collectives/algorithms.hpp"
#include "collectives/blocks.hpp"

namespace hcomm::collectives {

void DirectAllgather::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const int n = ctx.size, r = ctx.rank;
  const size_t esize = dtype_size(op.dtype);
  const Block mine = recv_block(op, r);
  if (mine.bytes > 0 && op.send != op.recv + mine.offset)
    s.copy(op.recv + mine.offset, op.send, mine.bytes);
  for (int k = 1; k < n; ++k) {
    const int to = (r + k) % n, from = (r - k + n) % n;
    send_chunks(s, ctx, esize, to, 0, op.send, mine.bytes, mine.offset);
    const Block in = recv_block(op, from);
    recv_chunks(s, ctx, esize, from, 0, op.recv + in.offset, in.bytes, in.offset);
  }
}

}  // namespace hcomm::collectives
