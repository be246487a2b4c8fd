// Hierarchical allreduce over the hosts of PlanContext::host_of: (1) each host reduces to its
// leader, its lowest rank; (2) the leaders, one per host, allreduce; (3) each leader broadcasts
// the result to its host. Only phase 2 crosses hosts, so a host sends and receives about 2S
// bytes (ring) instead of 2S per rank as in a flat ring. Each phase is an existing builder planned
// for the sub-group's virtual ranks 0..k-1 and appended with Schedule::append, the phases one
// after the other on each rank. avg sums in every phase and the leader divides once, by the
// world size, before broadcasting. A buffer of 8 MiB or more goes in segments of at least 4 MiB
// (at most 16) that pipeline: a segment's phase 2 overlaps the next one's phase 1.
#include <algorithm>
#include <set>

#include "collectives/algorithms.hpp"

namespace hcomm::collectives {
namespace {

// Phase p of segment k has step tags from (3k + p) * kPhaseTags, above any builder's own tags:
// phases 1 and 3 both run between the ranks of a host, and segments run at once; no two may
// share a match key.
constexpr uint32_t kPhaseTags = 1u << 20;

}  // namespace

void HierarchicalAllreduce::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t esize = dtype_size(op.dtype), total = op.count * esize;
  // Large buffers go in segments that pipeline through the phases: segment k crosses hosts
  // (phase 2) while segment k + 1 is reduced within the hosts (phase 1).
  const size_t segments = std::max<size_t>(1, std::min(kMaxSegments, total / kSegmentBytes));
  const size_t per = (op.count + segments - 1) / segments;
  Schedule::Id previous_first = Schedule::kNone;
  for (size_t k = 0; k * per < op.count; ++k) {
    Operation seg = op;
    const size_t first = k * per, n = std::min(per, op.count - first);
    seg.count = n;
    if (seg.send != nullptr) seg.send += first * esize;
    if (seg.recv != nullptr) seg.recv += first * esize;
    previous_first = build_segment(seg, ctx, s, static_cast<uint32_t>(k), previous_first);
  }
}

Schedule::Id HierarchicalAllreduce::build_segment(const Operation& op, const PlanContext& ctx,
                                                  Schedule& s, uint32_t segment,
                                                  Schedule::Id after) {
  const size_t total = op.count * dtype_size(op.dtype);
  const uint32_t tags = segment * 3 * kPhaseTags;
  auto host = [&](int r) { return ctx.host_of ? (*ctx.host_of)[static_cast<size_t>(r)] : 0; };
  // This rank's host in ascending rank order (the leader first), and each host's leader.
  std::vector<int> members, leaders;
  std::set<int> seen;
  for (int r = 0; r < ctx.size; ++r) {
    if (host(r) == host(ctx.rank)) members.push_back(r);
    if (seen.insert(host(r)).second) leaders.push_back(r);
  }
  const int local =
      static_cast<int>(std::find(members.begin(), members.end(), ctx.rank) - members.begin());
  const int hosts = static_cast<int>(leaders.size()), host_size = static_cast<int>(members.size());
  const PlanContext local_ctx{local, host_size, ctx.chunk_bytes};

  Operation sub = op;
  sub.algo = total >= kRingBytes ? Algorithm::ring : Algorithm::rd;
  if (op.redop == ReduceOp::avg) sub.redop = ReduceOp::sum;
  Schedule::Id last = after;  // the previous segment's phase 1: segments enter in order
  Schedule::Id first_phase = Schedule::kNone;
  const std::byte* partial = op.send;  // the leader's host-wide partial result

  if (host_size > 1) {  // (1) reduce to the leader; non-leaders' op.recv is untouched
    sub.kind = OpKind::reduce;
    sub.root = 0;
    last = first_phase = s.append(plan(sub, local_ctx), members, tags, last);
    partial = op.recv;
  }
  if (local == 0) {  // (2) the leaders' allreduce, into op.recv
    if (hosts > 1) {
      sub.kind = OpKind::allreduce;
      sub.root = -1;
      sub.send = partial;
      sub.recv = op.recv;
      const int at =
          static_cast<int>(std::find(leaders.begin(), leaders.end(), ctx.rank) - leaders.begin());
      last = s.append(plan(sub, PlanContext{at, hosts, ctx.chunk_bytes}), leaders,
                      tags + kPhaseTags, last);
      if (first_phase == Schedule::kNone) first_phase = last;
    } else if (partial != op.recv) {
      const Schedule::Id copied = s.copy(op.recv, partial, total);
      s.order(last, copied);
      last = copied;
    }
    if (op.redop == ReduceOp::avg) {  // divides by the world size
      const Schedule::Id averaged = s.average(op.recv, total);
      s.order(last, averaged);
      last = averaged;
    }
  }
  if (host_size > 1) {  // (3) broadcast from the leader; after (1), which may read op.recv
    sub.kind = OpKind::broadcast;
    sub.root = 0;
    sub.send = op.recv;
    sub.recv = op.recv;
    s.append(plan(sub, local_ctx), members, tags + 2 * kPhaseTags, last);
  }
  return first_phase;
}

}  // namespace hcomm::collectives
