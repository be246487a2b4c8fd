#include "chaos/verdict.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>

#include "chaos/format.hpp"

namespace hcomm::tools::chaos {

bool Verdict::ok() const {
  return failures() == 0;
}

size_t Verdict::failures() const {
  return static_cast<size_t>(
      std::count_if(checks_.begin(), checks_.end(), [](const Check& c) { return !c.ok; }));
}

double peer_lost_bound_ms(const Options& o, const Config& config) {
  return o.max_detect_ms ? *o.max_detect_ms : static_cast<double>(config.peer_timeout.count());
}

Verdict judge_rank(const Options& o, const FaultPlan& plan, const RankView& v) {
  Verdict out;
  const RunRecord& rec = v.rec;

  // Results.
  if (rec.wrong_iterations > 0) {
    const Mismatch& m = rec.mismatches.front();
    out.add("results", false,
            format("%" PRIu64 " of %zu iterations wrong; the first: iteration %" PRIu64
                   ", %zu elements wrong from index %zu (got %.9g, want %.9g)",
                   rec.wrong_iterations, rec.iterations.size(), m.iteration, m.wrong, m.index,
                   static_cast<double>(m.got), static_cast<double>(m.want)));
  } else {
    out.add("results", true,
            v.checks_elements
                ? format("%zu iterations, each compared element by element", rec.iterations.size())
                : format("%zu iterations, checked through the digest only (fp16/bf16 "
                         "compression, or random data reduced on more than 2 ranks)",
                         rec.iterations.size()));
  }

  // Operations: none may fail, except with HCOMM_ERR_PEER_LOST when that is expected.
  switch (rec.ending) {
    case Ending::completed:
      out.add("operations", true, "none failed");
      break;
    case Ending::peer_lost:
      if (o.expect_peer_lost) break;
      [[fallthrough]];
    case Ending::failed:
    case Ending::hung:
      out.add("operations", false,
              format("iteration %" PRIu64 " at %.3f s: %s", rec.error_iteration, rec.error_at_s,
                     rec.error.to_string().c_str()));
      break;
  }

  if (o.expect_peer_lost) {
    if (rec.ending != Ending::peer_lost) {
      out.add("peer lost", false,
              std::string("expected an operation to fail with HCOMM_ERR_PEER_LOST; the loop ") +
                  (rec.ending == Ending::completed ? "completed" : "ended otherwise"));
    } else {
      const double after = *v.analysis.peer_lost_after_ms;
      const double bound = peer_lost_bound_ms(o, v.config);
      const bool in_time = !o.max_detect_ms || after <= bound;
      out.add("peer lost", in_time,
              format("HCOMM_ERR_PEER_LOST after %.0f ms (bound %.0f ms)%s", after, bound,
                     o.max_detect_ms ? "" : ", not checked without --max-detect-ms"));
    }
  }

  if (o.max_op_ms) {
    const bool ok = rec.ending != Ending::hung && rec.max_op_ms <= *o.max_op_ms;
    out.add("longest operation", ok,
            rec.ending == Ending::hung
                ? format("an operation did not complete within %.0f ms", *o.max_op_ms)
                : format("%.1f ms (iteration %" PRIu64 "), bound %.0f ms", rec.max_op_ms,
                         rec.max_op_iteration, *o.max_op_ms));
  }

  if (o.max_detect_ms) {
    for (size_t i = 0; i < plan.faults().size(); ++i) {
      const FaultFigures& f = v.analysis.faults[i];
      if (f.victim || !f.detection) continue;  // --expect-detection asks for one
      out.add("detection of " + plan.faults()[i].label, f.detection->after_ms <= *o.max_detect_ms,
              format("%s after %.1f ms (peer %d), bound %.0f ms",
                     link_event_name(f.detection->first.event.kind), f.detection->after_ms,
                     f.detection->first.event.peer, *o.max_detect_ms));
    }
  }

  if (o.max_failovers)
    out.add("failovers on this rank", v.stats.failovers <= *o.max_failovers,
            format("%" PRIu64 ", at most %" PRIu64, v.stats.failovers, *o.max_failovers));

  if (o.max_switches)
    for (size_t i = 0; i < plan.faults().size(); ++i) {
      const FaultFigures& f = v.analysis.faults[i];
      if (f.victim) continue;
      out.add("switches during " + plan.faults()[i].label, f.switches <= *o.max_switches,
              format("%" PRIu64 " failovers and failbacks, at most %" PRIu64, f.switches,
                     *o.max_switches));
    }

  if (o.min_during_pct)
    for (const Window& w : v.analysis.windows) {
      if (w.name != "during") continue;
      const double pct = v.reference_gbps > 0 ? 100 * w.gbps_in_ops / v.reference_gbps : 0;
      out.add("throughput during the faults", pct >= *o.min_during_pct,
              format("%.3f GB/s in operations, %.0f%% of the fallback alone (%.3f GB/s), at "
                     "least %.0f%%",
                     w.gbps_in_ops, pct, v.reference_gbps, *o.min_during_pct));
    }

  if (!o.expect_final_transport.empty()) {
    std::string wrong;
    for (const auto& [peer, name] : rec.transports_end) {
      if (std::find(v.lost_peers.begin(), v.lost_peers.end(), peer) != v.lost_peers.end()) continue;
      if (name != o.expect_final_transport)
        wrong += format("%srank %d on %s", wrong.empty() ? "" : ", ", peer, name.c_str());
    }
    out.add("final transport", wrong.empty(),
            wrong.empty() ? "every live peer on " + o.expect_final_transport
                          : "expected " + o.expect_final_transport + ": " + wrong);
  }

  if (o.expect_digest)
    out.add("digest", rec.digest == *o.expect_digest,
            format("%016" PRIx64 ", expected %016" PRIx64, rec.digest, *o.expect_digest));

  for (const std::string& p : v.injection_problems) out.add("schedule", false, p);
  return out;
}

Verdict judge_job(const Options& o, const FaultPlan& plan,
                  const std::vector<RankSummary>& summaries, bool complete) {
  Verdict out;
  const std::string whose = complete ? "all ranks" : "this rank alone (figures not gathered)";
  uint64_t failovers = 0, failbacks = 0;
  std::array<uint64_t, kEventKinds> events{};
  for (const RankSummary& s : summaries) {
    failovers += s.failovers;
    failbacks += s.failbacks;
    for (size_t k = 0; k < kEventKinds; ++k) events[k] += s.events[k];
  }
  if (o.expect_failovers)
    out.add("failovers", failovers >= *o.expect_failovers,
            format("%" PRIu64 " on %s, at least %" PRIu64, failovers, whose.c_str(),
                   *o.expect_failovers));
  if (o.expect_failbacks)
    out.add("failbacks", failbacks >= *o.expect_failbacks,
            format("%" PRIu64 " on %s, at least %" PRIu64, failbacks, whose.c_str(),
                   *o.expect_failbacks));
  for (const std::string& kind : o.expect_events) {
    uint64_t n = 0;
    for (size_t k = 0; k < kEventKinds; ++k)
      if (kind == link_event_name(static_cast<LinkEvent::Kind>(k))) n = events[k];
    out.add("event " + kind, n > 0, format("%" PRIu64 " on %s", n, whose.c_str()));
  }
  if (o.expect_detection) {
    for (size_t i = 0; i < plan.faults().size(); ++i) {
      std::string by;
      for (const RankSummary& s : summaries)
        if (!plan.is_victim(i, s.rank) && !std::isnan(s.detection_ms[i]))
          by +=
              format("%srank %d after %.0f ms", by.empty() ? "" : ", ", s.rank, s.detection_ms[i]);
      out.add("detection of " + plan.faults()[i].label, !by.empty(),
              by.empty() ? "no failover, link_down or peer_lost event on " + whose : "by " + by);
    }
  }
  if (complete && summaries.size() > 1) {
    // Every operation here gives every rank the same result, bit for bit.
    bool same = true;
    for (const RankSummary& s : summaries)
      same = same && s.digest == summaries[0].digest && s.iterations == summaries[0].iterations;
    std::string digests;
    for (const RankSummary& s : summaries)
      digests += format("%s%016" PRIx64, digests.empty() ? "" : " ", s.digest);
    out.add("ranks agree", same,
            same ? "every rank's results have digest " + digests.substr(0, 16)
                 : "the ranks' results differ: digests " + digests);
  }
  return out;
}

}  // namespace hcomm::tools::chaos
