// Dissemination barrier: in round k every rank signals rank + 2^k and waits for rank - 2^k; after
// ceil(log2 n) rounds each rank has heard, directly or not, from every other.
#include "collectives/algorithms.hpp"

namespace hcomm::collectives {

void DisseminationBarrier::build(const Operation&, const PlanContext& ctx, Schedule& s) {
  const int n = ctx.size, r = ctx.rank;
  Schedule::Id heard = Schedule::kNone;
  uint32_t round = 0;
  for (int dist = 1; dist < n; dist *= 2, ++round) {
    Schedule::Id signal = s.send((r + dist) % n, round, 0, nullptr, 0, 0);
    s.order(heard, signal);
    heard = s.recv((r - dist % n + n) % n, round, 0, nullptr, 0, 0);
  }
}

}  // namespace hcomm::collectives
