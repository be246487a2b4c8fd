// Pipelined chain broadcast: ranks form a chain starting at the root; each rank receives chunk k
// from its predecessor and forwards it to its successor while chunk k+1 is arriving. Every link
// carries the data once; latency is n-1 hops for the first chunk.
#include "collectives/algorithms.hpp"

namespace hcomm::coll {

void ChainBroadcast::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const int n = ctx.size, r = ctx.rank;
  const size_t esize = dtype_size(op.dtype);
  if (n == 1 || op.count == 0) return;
  const int pos = (r - op.root + n) % n;
  const int prev = (r + n - 1) % n, next = (r + 1) % n;
  const auto chunks = split_chunks(0, op.count * esize, ctx.chunk_bytes, esize);
  for (size_t c = 0; c < chunks.size(); ++c) {
    auto [off, bytes] = chunks[c];
    Schedule::Id got = Schedule::kNone;
    if (pos > 0) got = s.recv(prev, 0, static_cast<uint32_t>(c), op.recv + off, bytes, off);
    if (pos < n - 1) {
      Schedule::Id fwd = s.send(next, 0, static_cast<uint32_t>(c), op.recv + off, bytes, off);
      s.order(got, fwd);
    }
  }
}

}  // namespace hcomm::coll
