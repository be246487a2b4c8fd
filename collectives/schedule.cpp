// Schedule composition: an algorithm built from others (the hierarchical allreduce) plans each
// phase for a sub-group with the existing builders, as if its members were ranks 0..k-1, and
// appends the result here with real ranks, distinct tags and the phases ordered by join steps.
#include "collectives/schedule.hpp"

namespace hcomm::collectives {

Schedule::Id Schedule::append(Schedule&& sub, const std::vector<int>& peer_of_virtual_rank,
                              uint32_t tag_offset, Id after) {
  const Id base = static_cast<Id>(steps_.size());
  std::vector<Id> sources, sinks;
  for (Id i = 0; i < sub.steps_.size(); ++i) {
    Step& st = sub.steps_[i];
    if (st.peer >= 0) {
      st.peer = peer_of_virtual_rank[static_cast<size_t>(st.peer)];
      st.tag_step += tag_offset;
    }
    for (uint32_t& next : st.then) next += base;
    if (st.waits == 0) sources.push_back(base + i);
    if (st.then.empty()) sinks.push_back(base + i);
    steps_.push_back(std::move(st));
  }
  for (auto& block : sub.scratch_) scratch_.push_back(std::move(block));
  sub = Schedule();
  for (Id s : sources) order(after, s);
  const Id done = join();
  order(after, done);  // an empty sub-schedule still passes the order on
  for (Id s : sinks) order(s, done);
  return done;
}

}  // namespace hcomm::collectives
