// Recursive doubling allreduce: in round k every participant exchanges its whole partial result
// (chunked only to bound frames) with participant id ^ 2^k and combines the two; after log2(p)
// rounds all hold the total, bit-identical since a (op) b == b (op) a. Extra ranks fold in first
// and get the result back last (PowerOfTwoFold). Fewest rounds: small messages. An exchange
// cannot reduce into what it sends, so partial results alternate between recv and scratch,
// arranged so that the last lands in recv.
#include "collectives/algorithms.hpp"
#include "collectives/power_of_two_fold.hpp"

namespace hcomm::collectives {

void RecursiveDoublingAllreduce::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t esize = dtype_size(op.dtype), total = op.count * esize;
  const PowerOfTwoFold fold(ctx.rank, ctx.size);
  const uint32_t back_tag = static_cast<uint32_t>(fold.rounds + 1);
  std::byte* scratch = fold.id >= 0 ? s.scratch(total) : nullptr;
  const auto chunks = split_chunks(0, total, ctx.chunk_bytes, esize);
  for (size_t c = 0; c < chunks.size(); ++c) {
    auto [off, bytes] = chunks[c];
    const uint32_t chunk = static_cast<uint32_t>(c);
    if (fold.id < 0) {  // sits out: hand the data over, get the result back
      Schedule::Id give = s.send(fold.partner, 0, chunk, op.send + off, bytes, off);
      s.order(give, s.recv(fold.partner, back_tag, chunk, op.recv + off, bytes, off));
      continue;
    }
    std::byte* bufs[2] = {op.recv + off, scratch + off};
    const int writes = fold.rounds + (fold.partner >= 0 ? 1 : 0);
    int next_write = 0;
    auto target = [&] { return (writes - 1 - next_write++) % 2; };  // the last one is recv
    const std::byte* cur = op.send + off;
    int cur_buf = op.send == op.recv ? 0 : -1;  // which of bufs cur is (-1: the send buffer)
    Schedule::Id written = Schedule::kNone, reader[2] = {Schedule::kNone, Schedule::kNone};
    if (fold.partner >= 0) {
      const int b = target();
      written = s.recv_reduce(fold.partner, 0, chunk, bufs[b], cur, bytes, off);
      cur = bufs[b];
      cur_buf = b;
    }
    for (int k = 0; k < fold.rounds; ++k) {
      const int peer = fold.rank_of(fold.id ^ (1 << k));
      const uint32_t tag = static_cast<uint32_t>(k + 1);
      Schedule::Id give = s.send(peer, tag, chunk, cur, bytes, off);
      s.order(written, give);
      if (cur_buf >= 0) reader[cur_buf] = give;
      const int b = target();
      Schedule::Id got = s.recv_reduce(peer, tag, chunk, bufs[b], cur, bytes, off);
      s.order(written, got);
      // Not over bytes a send still reads (in place, round 0: even the send just posted).
      s.order(reader[b], got);
      written = got;
      cur = bufs[b];
      cur_buf = b;
    }
    if (op.redop == ReduceOp::avg) {
      Schedule::Id avg = s.average(op.recv + off, bytes);
      s.order(written, avg);
      written = avg;
    }
    if (fold.partner >= 0)
      s.order(written, s.send(fold.partner, back_tag, chunk, op.recv + off, bytes, off));
  }
}

}  // namespace hcomm::collectives
