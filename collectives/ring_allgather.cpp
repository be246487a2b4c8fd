// Ring allgather: at step s rank r forwards block r-s to its right neighbour and receives block
// r-s-1 from its left, chunk by chunk; a received chunk is forwarded as soon as it has landed.
// In place means send == recv + r * block (NCCL's convention); otherwise the own block is copied.
#include <vector>

#include "collectives/algorithms.hpp"

namespace hcomm::coll {

void RingAllgather::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const int n = ctx.size, r = ctx.rank;
  const size_t esize = dtype_size(op.dtype);
  const size_t block = op.count * esize;
  if (block == 0) return;
  auto mod = [n](int x) { return ((x % n) + n) % n; };
  std::byte* own = op.recv + static_cast<size_t>(r) * block;
  if (op.send != own) s.copy(own, op.send, block);
  if (n == 1) return;
  const int right = (r + 1) % n, left = mod(r - 1);
  const auto chunks = split_chunks(0, block, ctx.chunk_bytes, esize);
  std::vector<Schedule::Id> landed(chunks.size(), Schedule::kNone);  // previous step's receives
  for (int st = 0; st < n - 1; ++st) {
    const size_t sblk = static_cast<size_t>(mod(r - st)) * block;
    const size_t rblk = static_cast<size_t>(mod(r - st - 1)) * block;
    for (size_t c = 0; c < chunks.size(); ++c) {
      auto [off, bytes] = chunks[c];
      const std::byte* from = st == 0 ? op.send + off : op.recv + sblk + off;
      Schedule::Id send = s.send(right, static_cast<uint32_t>(st), static_cast<uint32_t>(c), from,
                                 bytes, sblk + off);
      s.order(landed[c], send);
      landed[c] = s.recv(left, static_cast<uint32_t>(st), static_cast<uint32_t>(c),
                         op.recv + rblk + off, bytes, rblk + off);
    }
  }
}

}  // namespace hcomm::coll
