// Pairwise alltoall(v): at index k each rank sends its block for rank + k and receives the block
// from rank - k; all indices are posted at once and chunked, so every pair's exchange proceeds
// independently. In place (send == recv) the outgoing blocks are first staged in scratch, since
// the incoming ones overwrite them.
#include <algorithm>

#include "collectives/algorithms.hpp"
#include "collectives/blocks.hpp"

namespace hcomm::collectives {

void DirectAlltoall::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const int n = ctx.size, r = ctx.rank;
  const size_t esize = dtype_size(op.dtype);
  const std::byte* out = op.send;
  Schedule::Id staged = Schedule::kNone;
  if (op.send == op.recv) {
    size_t extent = 0;
    for (int i = 0; i < n; ++i) {
      const Block b = send_block(op, i);
      if (b.bytes > 0) extent = std::max(extent, b.offset + b.bytes);
    }
    std::byte* stage = s.scratch(extent);
    if (extent > 0) staged = s.copy(stage, op.send, extent);
    out = stage;
  }
  const Block own_out = send_block(op, r), own_in = recv_block(op, r);
  if (own_out.bytes > 0 && out + own_out.offset != op.recv + own_in.offset)
    s.order(staged, s.copy(op.recv + own_in.offset, out + own_out.offset, own_out.bytes));
  for (int k = 1; k < n; ++k) {
    const int to = (r + k) % n, from = (r - k + n) % n;
    const Block b_out = send_block(op, to), b_in = recv_block(op, from);
    send_chunks(s, ctx, esize, to, 0, out + b_out.offset, b_out.bytes, b_out.offset, staged);
    recv_chunks(s, ctx, esize, from, 0, op.recv + b_in.offset, b_in.bytes, b_in.offset, staged);
  }
}

}  // namespace hcomm::collectives
