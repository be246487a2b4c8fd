// Detection, recovery and throughput windows from one rank's records.
#include "chaos/analysis.hpp"

#include <algorithm>
#include <limits>

namespace hcomm::tools::chaos {
namespace {

Window window(const std::string& name, double from_s, double to_s, const RunRecord& rec,
              size_t bytes) {
  Window w;
  w.name = name;
  w.from_s = from_s;
  w.to_s = to_s;
  std::vector<double> ms;
  double total_ms = 0;
  for (const IterationTime& it : rec.iterations)
    if (it.start_s >= from_s && it.start_s < to_s) {
      ms.push_back((it.end_s - it.start_s) * 1e3);
      total_ms += ms.back();
    }
  w.iterations = ms.size();
  if (total_ms > 0)
    w.gbps_in_ops =
        static_cast<double>(bytes) * static_cast<double>(ms.size()) / (total_ms * 1e-3) / 1e9;
  if (!ms.empty()) {
    std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
    w.median_ms = ms[ms.size() / 2];
    if (w.median_ms > 0) w.algbw_gbps = static_cast<double>(bytes) / (w.median_ms * 1e-3) / 1e9;
  }
  if (to_s > from_s) w.iters_per_s = static_cast<double>(w.iterations) / (to_s - from_s);
  return w;
}

}  // namespace

double gbps_in_ops(const RunRecord& rec, size_t bytes) {
  return rec.iterations.empty() ? 0 : window("", 0, 1e300, rec, bytes).gbps_in_ops;
}

bool is_detection(LinkEvent::Kind kind) {
  return kind == LinkEvent::Kind::failover || kind == LinkEvent::Kind::link_down ||
         kind == LinkEvent::Kind::peer_lost;
}

Analysis analyze(const FaultPlan& plan, const RunRecord& rec, const FailoverStats& stats,
                 std::chrono::system_clock::time_point start, size_t bytes, int rank) {
  Analysis a;
  for (const LinkEvent& e : stats.events)
    a.events.push_back({std::chrono::duration<double>(e.when - start).count(), e});

  const auto& faults = plan.faults();
  for (size_t i = 0; i < faults.size(); ++i) {
    const Fault& f = faults[i];
    FaultFigures ff;
    ff.victim = plan.is_victim(i, rank);
    // Events up to the next fault's time are this fault's.
    const double until =
        i + 1 < faults.size() ? faults[i + 1].at_s : std::numeric_limits<double>::infinity();
    for (const TimedEvent& te : a.events) {
      if (te.t_s < f.at_s || te.t_s >= until) continue;
      const LinkEvent::Kind k = te.event.kind;
      if (k == LinkEvent::Kind::failover || k == LinkEvent::Kind::failback) ++ff.switches;
      if (!ff.detection && is_detection(k)) ff.detection = Detection{(te.t_s - f.at_s) * 1e3, te};
    }
    double covered_until = f.end_s();
    if (ff.detection) {
      for (const IterationTime& it : rec.iterations) {
        if (it.end_s <= ff.detection->first.t_s) continue;
        ff.recovery_ms = (it.end_s - f.at_s) * 1e3;
        covered_until = std::max(covered_until, it.end_s);
        break;
      }
    }
    for (const IterationTime& it : rec.iterations)
      if (it.end_s >= f.at_s && it.start_s <= covered_until)
        ff.longest_op_ms = std::max(ff.longest_op_ms, (it.end_s - it.start_s) * 1e3);
    if (ff.victim) ff = FaultFigures{true, std::nullopt, std::nullopt, ff.longest_op_ms, 0};
    a.faults.push_back(ff);
  }

  if (rec.ending == Ending::peer_lost)
    a.peer_lost_after_ms = (rec.error_at_s - plan.loss_reference_s(rec.error_at_s)) * 1e3;

  const double end = rec.duration_s;
  if (auto span = plan.span()) {
    const double from = std::min(span->first, end), to = std::min(span->second, end);
    a.windows.push_back(window("before", 0, from, rec, bytes));
    // An instant fault (a kill, a command without for=) has an empty "during".
    a.windows.push_back(window("during", from, to, rec, bytes));
    a.windows.push_back(window("after", to, end, rec, bytes));
  } else {
    a.windows.push_back(window("run", 0, end, rec, bytes));
  }
  return a;
}

}  // namespace hcomm::tools::chaos
