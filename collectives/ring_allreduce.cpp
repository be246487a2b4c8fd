// Ring allreduce around the ring order (PlanContext::ring_order; p below is this rank's position
// in it). The buffer is cut into n segments; in n-1 reduce-scatter steps each rank sends one
// segment to its right neighbour (position p+1) and reduces the one arriving from its left, so
// that position p ends with segment p+1 fully reduced; n-1 allgather steps then circulate the
// reduced segments. Each segment moves in chunks with their own steps: chunk k+1 is on the wire
// while chunk k is reduced. Out of place, the first step reads the send buffer and every
// reduction writes recv = send (op) incoming, so no initial copy is needed.
#include <map>

#include "collectives/algorithms.hpp"

namespace hcomm::collectives {

void RingAllreduce::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  // Segments are numbered by position in the ring order, not by rank.
  const int n = ctx.size, p = ctx.position_of(ctx.rank);
  const size_t esize = dtype_size(op.dtype);
  const int right = ctx.rank_at(p + 1), left = ctx.rank_at(p - 1);
  auto seg_begin = [&](int i) {  // first element of segment i
    size_t base = op.count / static_cast<size_t>(n), extra = op.count % static_cast<size_t>(n);
    size_t ui = static_cast<size_t>(i);
    return ui * base + std::min(ui, extra);
  };
  auto seg_chunks = [&](int i) {
    size_t b = seg_begin(i) * esize, e = seg_begin(i + 1) * esize;
    return split_chunks(b, e - b, ctx.chunk_bytes, esize);
  };
  auto mod = [n](int x) { return ((x % n) + n) % n; };

  // Per (segment, chunk): the last step that wrote recv there, and the send that read it.
  std::map<std::pair<int, size_t>, Schedule::Id> last_write, reader;
  auto get = [](auto& m, int seg, size_t c) {
    auto it = m.find({seg, c});
    return it == m.end() ? Schedule::kNone : it->second;
  };

  for (int st = 0; st < n - 1; ++st) {
    const int sseg = mod(p - st), rseg = mod(p - st - 1);
    auto sc = seg_chunks(sseg);
    for (size_t c = 0; c < sc.size(); ++c) {
      auto [off, bytes] = sc[c];
      const std::byte* from = (st == 0 ? op.send : op.recv) + off;
      Schedule::Id id =
          s.send(right, static_cast<uint32_t>(st), static_cast<uint32_t>(c), from, bytes, off);
      s.order(get(last_write, sseg, c), id);
      // Only a send that reads recv holds back the allgather receive into the same bytes: out of
      // place, the first step's receives are then posted at once, before their frames arrive.
      if (from >= op.recv && from < op.recv + op.count * esize) reader[{sseg, c}] = id;
    }
    auto rc = seg_chunks(rseg);
    for (size_t c = 0; c < rc.size(); ++c) {
      auto [off, bytes] = rc[c];
      last_write[{rseg, c}] =
          s.recv_reduce(left, static_cast<uint32_t>(st), static_cast<uint32_t>(c), op.recv + off,
                        op.send + off, bytes, off);
    }
  }

  const int owned = mod(p + 1);
  if (op.redop == ReduceOp::avg) {
    auto oc = seg_chunks(owned);
    for (size_t c = 0; c < oc.size(); ++c) {
      auto [off, bytes] = oc[c];
      Schedule::Id id = s.average(op.recv + off, bytes);
      s.order(get(last_write, owned, c), id);
      last_write[{owned, c}] = id;
    }
  }

  for (int st = 0; st < n - 1; ++st) {
    const uint32_t tag = static_cast<uint32_t>(n - 1 + st);
    const int sseg = mod(p + 1 - st), rseg = mod(p - st);
    auto sc = seg_chunks(sseg);
    for (size_t c = 0; c < sc.size(); ++c) {
      auto [off, bytes] = sc[c];
      Schedule::Id id = s.send(right, tag, static_cast<uint32_t>(c), op.recv + off, bytes, off);
      s.order(get(last_write, sseg, c), id);
    }
    auto rc = seg_chunks(rseg);
    for (size_t c = 0; c < rc.size(); ++c) {
      auto [off, bytes] = rc[c];
      Schedule::Id id = s.recv(left, tag, static_cast<uint32_t>(c), op.recv + off, bytes, off);
      // Overwrite only after the reduce-scatter send of this chunk has read it.
      s.order(get(reader, rseg, c), id);
      s.order(get(last_write, rseg, c), id);
      last_write[{rseg, c}] = id;
    }
  }
}

}  // namespace hcomm::collectives
