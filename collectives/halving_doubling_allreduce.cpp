// Rabenseifner's allreduce: a recursive-halving reduce-scatter (each round a participant keeps
// the half of its range holding its own block and sends the other half to id ^ (p >> (k+1))),
// then a recursive-doubling allgather of the reduced blocks. log rounds like recursive doubling
// but only 2(n-1)/n of the data per rank, like the ring: mid sizes. Extra ranks fold in and out
// (PowerOfTwoFold). Blocks are cut into chunks ("units"), each ordered after the step that last
// wrote it and the sends still reading it.
#include "collectives/algorithms.hpp"
#include "collectives/power_of_two_fold.hpp"

namespace hcomm::collectives {

void HalvingDoublingAllreduce::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t esize = dtype_size(op.dtype);
  const PowerOfTwoFold fold(ctx.rank, ctx.size);
  const int p = fold.p, rounds = fold.rounds;

  // Block b (participant b's share) is units [first[b], first[b+1]).
  std::vector<std::pair<size_t, size_t>> units;
  std::vector<size_t> first;
  const size_t up = static_cast<size_t>(p), base = op.count / up, extra = op.count % up;
  for (size_t b = 0, elem = 0; b < up; ++b) {
    first.push_back(units.size());
    const size_t n_elems = base + (b < extra ? 1 : 0);
    for (auto piece : split_chunks(elem * esize, n_elems * esize, ctx.chunk_bytes, esize))
      units.push_back(piece);
    elem += n_elems;
  }
  first.push_back(units.size());
  auto unit_range = [&](int lo_block, int blocks) {
    return std::make_pair(first[static_cast<size_t>(lo_block)],
                          first[static_cast<size_t>(lo_block + blocks)]);
  };

  std::vector<Schedule::Id> written(units.size(), Schedule::kNone);
  std::vector<std::vector<Schedule::Id>> readers(units.size());
  auto read = [&](size_t u, Schedule::Id id) {
    s.order(written[u], id);
    readers[u].push_back(id);
  };
  auto write = [&](size_t u, Schedule::Id id) {
    s.order(written[u], id);
    for (Schedule::Id r : readers[u]) s.order(r, id);
    readers[u].clear();
    written[u] = id;
  };
  // The current value of a unit: the input until something was reduced into recv.
  auto data = [&](size_t u) {
    return (written[u] == Schedule::kNone ? op.send : op.recv) + units[u].first;
  };
  auto send_units = [&](int peer, uint32_t tag, std::pair<size_t, size_t> range) {
    for (size_t u = range.first; u < range.second; ++u)
      read(u,
           s.send(peer, tag, static_cast<uint32_t>(u), data(u), units[u].second, units[u].first));
  };
  const uint32_t back_tag = static_cast<uint32_t>(2 * rounds + 1);
  const std::pair<size_t, size_t> all{0, units.size()};

  if (fold.id < 0) {  // sits out: hand the data over, get the result back
    send_units(fold.partner, 0, all);
    for (size_t u = 0; u < units.size(); ++u)
      write(u, s.recv(fold.partner, back_tag, static_cast<uint32_t>(u), op.recv + units[u].first,
                      units[u].second, units[u].first));
    return;
  }
  auto reduce_units = [&](int peer, uint32_t tag, std::pair<size_t, size_t> range) {
    for (size_t u = range.first; u < range.second; ++u) {
      auto [off, bytes] = units[u];
      write(u,
            s.recv_reduce(peer, tag, static_cast<uint32_t>(u), op.recv + off, data(u), bytes, off));
    }
  };
  if (fold.partner >= 0) reduce_units(fold.partner, 0, all);

  const int id = fold.id;
  for (int k = 0; k < rounds; ++k) {  // reduce-scatter: ranges halve
    const int d = p >> (k + 1), lo = id & ~(2 * d - 1);
    const int keep = (id & d) ? lo + d : lo, give = (id & d) ? lo : lo + d;
    const int peer = fold.rank_of(id ^ d);
    const uint32_t tag = static_cast<uint32_t>(1 + k);
    send_units(peer, tag, unit_range(give, d));
    reduce_units(peer, tag, unit_range(keep, d));
  }
  if (op.redop == ReduceOp::avg) {
    auto [b, e] = unit_range(id, 1);
    for (size_t u = b; u < e; ++u) write(u, s.average(op.recv + units[u].first, units[u].second));
  }
  for (int k = 0; k < rounds; ++k) {  // allgather: ranges double
    const int d = 1 << k, peer_id = id ^ d;
    const int peer = fold.rank_of(peer_id);
    const uint32_t tag = static_cast<uint32_t>(1 + rounds + k);
    send_units(peer, tag, unit_range(id & ~(d - 1), d));
    auto [b, e] = unit_range(peer_id & ~(d - 1), d);
    for (size_t u = b; u < e; ++u)
      write(u, s.recv(peer, tag, static_cast<uint32_t>(u), op.recv + units[u].first,
                      units[u].second, units[u].first));
  }
  if (fold.partner >= 0) send_units(fold.partner, back_tag, all);
}

}  // namespace hcomm::collectives
