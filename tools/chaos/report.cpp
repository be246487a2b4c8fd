#include "chaos/report.hpp"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "chaos/format.hpp"
#include "core/json_writer.hpp"

namespace hcomm::tools::chaos {
namespace {

std::string ms_or_dash(double ms) {
  return std::isnan(ms) ? "-" : format("%.0f ms", ms);
}

void json_transports(core::JsonWriter& j, const std::map<int, std::string>& transports) {
  j.begin_object();
  for (const auto& [peer, name] : transports) j.field(std::to_string(peer), name);
  j.end_object();
}

void json_checks(core::JsonWriter& j, const Verdict& v) {
  j.begin_array();
  for (const Check& c : v.checks())
    j.begin_object().field("name", c.name).field("ok", c.ok).field("detail", c.detail).end_object();
  j.end_array();
}

}  // namespace

Report::Report(const Options& o, const FaultPlan& plan, const Workload& w, const Communicator& comm)
    : o_(o),
      plan_(plan),
      w_(w),
      rank_(comm.rank()),
      size_(comm.size()),
      config_(comm.config()),
      algorithm_(comm.algorithm_for(w.op(), w.count() * sizeof(float))) {}

void Report::header() const {
  std::string length =
      o_.iters != 0 ? format("%" PRIu64 " iterations", o_.iters) : format("%g s", o_.seconds);
  if (o_.interval_ms > 0) length += format(", %g ms apart", o_.interval_ms);
  std::printf("# hcomm-chaos: %s of %zu B (%zu float32%s) on %d ranks; data %s (seed %" PRIu64
              "); algorithm %s; %s\n",
              w_.op().c_str(), w_.bytes(), w_.count(), w_.op() == "allgather" ? " per rank" : "",
              size_, o_.data == DataMode::exact ? "exact" : "random", o_.seed,
              algorithm_.empty() ? "?" : algorithm_.c_str(), length.c_str());
  const Config& c = config_;
  std::printf(
      "# failover settings: HCOMM_FAILOVER=%s, keep-alive %lld ms, timeout %lld ms, peer "
      "timeout %lld ms, reconnect %lld..%lld ms, failback after %lld ms, limit %d "
      "failovers in %lld s, fallback interface %s, primary interface %s\n",
      to_string(c.failover), static_cast<long long>(c.keepalive_interval.count()),
      static_cast<long long>(c.keepalive_timeout.count()),
      static_cast<long long>(c.peer_timeout.count()),
      static_cast<long long>(c.reconnect_min.count()),
      static_cast<long long>(c.reconnect_max.count()),
      static_cast<long long>(c.failback_after.count()), c.failover_limit,
      static_cast<long long>(c.failover_window.count() / 1000),
      c.fallback_ifname.empty() ? "(the primary's)" : c.fallback_ifname.c_str(),
      c.socket_ifname.empty() ? "(the route to the root)" : c.socket_ifname.c_str());
  std::printf("# schedule (seconds from the start barrier):%s\n",
              plan_.empty() ? " no faults" : "");
  for (const Fault& f : plan_.faults())
    std::printf("#   %s: %s\n", f.label.c_str(), f.describe().c_str());
}

void Report::rank_figures(const RankView& v) const {
  const RunRecord& rec = v.rec;
  const Analysis& a = v.analysis;
  if (rec.ending == Ending::peer_lost) {
    std::string lost;
    for (int p : v.lost_peers) lost += format("%s%d", lost.empty() ? "" : " ", p);
    std::printf(
        "rank %d: HCOMM_ERR_PEER_LOST after %.0f ms (bound %.0f ms); lost ranks: %s; "
        "iteration %" PRIu64 ": %s\n",
        rank_, *a.peer_lost_after_ms, peer_lost_bound_ms(o_, config_),
        lost.empty() ? "none listed" : lost.c_str(), rec.error_iteration,
        rec.error.message().c_str());
  }
  for (const TimedEvent& te : a.events) {
    const LinkEvent& e = te.event;
    std::printf("rank %d: event %8.3f s %-17s peer %d %s%s%s%s: %s\n", rank_, te.t_s,
                link_event_name(e.kind), e.peer, e.from.c_str(), e.to.empty() ? "" : " -> ",
                e.to.c_str(),
                is_detection(e.kind) ? format(", detection %.1f ms", e.detection_ms).c_str() : "",
                e.reason.c_str());
  }
  for (size_t i = 0; i < a.faults.size(); ++i) {
    const FaultFigures& f = a.faults[i];
    const Fault& fault = plan_.faults()[i];
    std::string text;
    if (f.victim) {
      text = "this rank was its target";
    } else if (f.detection) {
      text = format("detected after %.1f ms (%s, peer %d; the library's detection_ms %.1f)",
                    f.detection->after_ms, link_event_name(f.detection->first.event.kind),
                    f.detection->first.event.peer, f.detection->first.event.detection_ms);
      if (f.recovery_ms) text += format(", recovered after %.1f ms", *f.recovery_ms);
    } else {
      text = "not detected (no failover, link_down or peer_lost event before the next fault)";
    }
    for (const Injection& in : v.injections)
      if (in.fault == i && !in.end)
        text +=
            format("; injected here at %.3f s%s", in.started_s,
                   in.took_ms > 0 ? format(" (the command took %.1f ms)", in.took_ms).c_str() : "");
    const std::string when = fault.end_s() > fault.at_s
                                 ? format("%.3f s .. %.3f s", fault.at_s, fault.end_s())
                                 : format("%.3f s", fault.at_s);
    std::printf("rank %d: %s [%s]: %s; longest operation %.1f ms; %" PRIu64
                " switches (failovers and failbacks) until the next fault\n",
                rank_, fault.label.c_str(), when.c_str(), text.c_str(), f.longest_op_ms,
                f.switches);
  }
  std::printf("rank %d: traffic at end: %s\n", rank_, transports_text(rec.transports_end).c_str());
  const FailoverStats& s = v.stats;
  std::printf("rank %d: %zu iterations in %.3f s, %" PRIu64 " compared element by element, %" PRIu64
              " wrong, longest operation %.1f ms; failovers %" PRIu64 ", failbacks %" PRIu64
              ", reconnects %" PRIu64 " (%" PRIu64 " attempts), peers lost %" PRIu64 ", %" PRIu64
              " frames (%" PRIu64 " B) replayed, %" PRIu64 " duplicates dropped; digest %016" PRIx64
              "\n",
              rank_, rec.iterations.size(), rec.duration_s, rec.checked, rec.wrong_iterations,
              rec.max_op_ms, s.failovers, s.failbacks, s.reconnects, s.reconnect_attempts,
              s.peers_lost, s.frames_replayed, s.bytes_replayed, s.duplicates_dropped, rec.digest);
  if (rank_ != 0) return;

  std::printf("# digest: %016" PRIx64 " (FNV-1a 64 of the %zu results of rank 0, %s)\n", rec.digest,
              rec.iterations.size(),
              rec.ending == Ending::completed ? "every iteration" : "the run ended early");
  if (v.reference_gbps > 0)
    std::printf(
        "# reference: the same workload over the fallback's network alone: %.3f GB/s in "
        "operations\n",
        v.reference_gbps);
  std::printf("# throughput (rank 0):  %8s %8s %7s %10s %11s %11s %8s %9s\n", "from s", "to s",
              "iters", "median ms", "algbw GB/s", "GB/s in ops", "of ref", "iters/s");
  for (const Window& w : a.windows) {
    if (w.iterations == 0) {
      std::printf("#   %-19s %8.3f %8.3f %7zu %10s %11s %11s %8s %9s\n", w.name.c_str(), w.from_s,
                  w.to_s, w.iterations, "-", "-", "-", "-", "-");
      continue;
    }
    const std::string of_ref =
        v.reference_gbps > 0 ? format("%.0f%%", 100 * w.gbps_in_ops / v.reference_gbps) : "-";
    std::printf("#   %-19s %8.3f %8.3f %7zu %10.3f %11.3f %11.3f %8s %9.1f\n", w.name.c_str(),
                w.from_s, w.to_s, w.iterations, w.median_ms, w.algbw_gbps, w.gbps_in_ops,
                of_ref.c_str(), w.iters_per_s);
  }
}

void Report::job_table(const std::vector<RankSummary>& all) const {
  std::printf("# all ranks: %4s %10s %6s %9s %9s %10s %5s %13s %-10s %s\n", "rank", "iterations",
              "wrong", "failovers", "failbacks", "reconnects", "lost", "longest op ms", "ending",
              "digest");
  for (const RankSummary& s : all)
    std::printf("#            %4d %10" PRIu64 " %6" PRIu64 " %9" PRIu64 " %9" PRIu64 " %10" PRIu64
                " %5" PRIu64 " %13.1f %-10s %016" PRIx64 "\n",
                s.rank, s.iterations, s.wrong_iterations, s.failovers, s.failbacks, s.reconnects,
                s.peers_lost, s.max_op_ms, ending_name(s.ending), s.digest);
  for (size_t i = 0; i < plan_.faults().size(); ++i) {
    std::string detected, recovered;
    for (const RankSummary& s : all) {
      if (plan_.is_victim(i, s.rank)) continue;
      detected += format("%s%d: %s", detected.empty() ? "" : ", ", s.rank,
                         ms_or_dash(s.detection_ms[i]).c_str());
      recovered += format("%s%d: %s", recovered.empty() ? "" : ", ", s.rank,
                          ms_or_dash(s.recovery_ms[i]).c_str());
    }
    std::printf("# %s: detected after (by rank) %s; recovered after %s\n",
                plan_.faults()[i].label.c_str(), detected.c_str(), recovered.c_str());
  }
}

void Report::verdict(const Verdict& mine, const Verdict& job, bool prints_job) const {
  if (rank_ == 0) {
    std::printf("# checks (rank 0):\n");
    for (const Check& c : mine.checks())
      std::printf("#   %-4s  %s: %s\n", c.ok ? "ok" : "FAIL", c.name.c_str(), c.detail.c_str());
  } else {
    for (const Check& c : mine.checks())
      if (!c.ok)
        std::printf("rank %d: CHECK FAILED: %s: %s\n", rank_, c.name.c_str(), c.detail.c_str());
  }
  if (prints_job && !job.checks().empty()) {
    if (rank_ == 0) {
      std::printf("# checks (over ranks):\n");
      for (const Check& c : job.checks())
        std::printf("#   %-4s  %s: %s\n", c.ok ? "ok" : "FAIL", c.name.c_str(), c.detail.c_str());
    } else {
      for (const Check& c : job.checks())
        if (!c.ok)
          std::printf("rank %d: CHECK FAILED: %s: %s\n", rank_, c.name.c_str(), c.detail.c_str());
    }
  }
  const size_t total = mine.checks().size() + (prints_job ? job.checks().size() : 0);
  const size_t failed = mine.failures() + (prints_job ? job.failures() : 0);
  if (rank_ == 0) {
    if (failed == 0) {
      std::printf("hcomm-chaos: PASSED (%zu checks)\n", total);
    } else {
      std::printf("hcomm-chaos: FAILED: %zu of %zu checks (see above)\n", failed, total);
    }
  } else {
    std::printf("rank %d: %s\n", rank_,
                failed == 0 ? format("all %zu checks passed", total).c_str()
                            : format("%zu of %zu checks FAILED", failed, total).c_str());
  }
}

std::string Report::rank_json(const RankView& v, const Verdict& mine) const {
  const RunRecord& rec = v.rec;
  const Analysis& a = v.analysis;
  const FailoverStats& s = v.stats;
  core::JsonWriter j;
  j.begin_object();
  j.field("rank", rank_).field("world_size", size_).field("op", w_.op());
  j.field("bytes", w_.bytes()).field("count", w_.count()).field("dtype", "float32");
  j.field("data", o_.data == DataMode::exact ? "exact" : "random").field("seed", o_.seed);
  j.field("algorithm", algorithm_);
  j.field("iterations", rec.iterations.size()).field("checked", rec.checked);
  j.field("wrong_iterations", rec.wrong_iterations);
  j.key("mismatches").begin_array();
  for (const Mismatch& m : rec.mismatches) {
    j.begin_object().field("iteration", m.iteration).field("index", m.index);
    j.field("wrong", m.wrong).field("got", m.got).field("want", m.want).end_object();
  }
  j.end_array();
  j.field("digest", format("%016" PRIx64, rec.digest)).field("duration_s", rec.duration_s);
  j.field("max_op_ms", rec.max_op_ms).field("max_op_iteration", rec.max_op_iteration);
  j.field("ending", ending_name(rec.ending));
  j.key("error");
  if (rec.ending == Ending::completed) {
    j.null();
  } else {
    j.begin_object().field("code", status_code_name(rec.error.code()));
    j.field("message", rec.error.message()).field("iteration", rec.error_iteration);
    j.field("t_s", rec.error_at_s).end_object();
  }
  j.key("peer_lost_after_ms");
  a.peer_lost_after_ms ? j.value(*a.peer_lost_after_ms) : j.null();
  j.key("lost_peers").begin_array();
  for (int p : v.lost_peers) j.value(p);
  j.end_array();

  j.key("failover").begin_object();
  j.field("failovers", s.failovers).field("failbacks", s.failbacks);
  j.field("reconnect_attempts", s.reconnect_attempts).field("reconnects", s.reconnects);
  j.field("peers_lost", s.peers_lost).field("frames_replayed", s.frames_replayed);
  j.field("bytes_replayed", s.bytes_replayed).field("duplicates_dropped", s.duplicates_dropped);
  j.end_object();
  j.key("events").begin_array();
  for (const TimedEvent& te : a.events) {
    const LinkEvent& e = te.event;
    j.begin_object().field("t_s", te.t_s).field("peer", e.peer);
    j.field("kind", link_event_name(e.kind)).field("from", e.from).field("to", e.to);
    j.field("reason", e.reason).field("detection_ms", e.detection_ms).end_object();
  }
  j.end_array();

  j.key("faults").begin_array();
  for (size_t i = 0; i < a.faults.size(); ++i) {
    const Fault& f = plan_.faults()[i];
    const FaultFigures& ff = a.faults[i];
    j.begin_object().field("label", f.label).field("description", f.describe());
    j.field("at_s", f.at_s).field("end_s", f.end_s()).field("victim", ff.victim);
    j.key("detection");
    if (ff.detection) {
      const LinkEvent& e = ff.detection->first.event;
      j.begin_object().field("after_ms", ff.detection->after_ms);
      j.field("t_s", ff.detection->first.t_s).field("kind", link_event_name(e.kind));
      j.field("peer", e.peer).field("detection_ms", e.detection_ms).end_object();
    } else {
      j.null();
    }
    j.key("recovery_ms");
    ff.recovery_ms ? j.value(*ff.recovery_ms) : j.null();
    j.field("longest_op_ms", ff.longest_op_ms).field("switches", ff.switches).end_object();
  }
  j.end_array();
  j.key("injections").begin_array();
  for (const Injection& in : v.injections) {
    j.begin_object().field("fault", plan_.faults()[in.fault].label).field("end", in.end);
    j.field("due_s", in.due_s).field("started_s", in.started_s).field("took_ms", in.took_ms);
    j.field("what", in.what).field("ok", in.ok).field("error", in.error).end_object();
  }
  j.end_array();

  j.field("reference_gbps", v.reference_gbps);
  j.key("windows").begin_array();
  for (const Window& w : a.windows) {
    j.begin_object().field("name", w.name).field("from_s", w.from_s).field("to_s", w.to_s);
    j.field("iterations", w.iterations).field("median_ms", w.median_ms);
    j.field("algbw_gbps", w.algbw_gbps).field("gbps_in_ops", w.gbps_in_ops);
    j.field("iters_per_s", w.iters_per_s).end_object();
  }
  j.end_array();
  j.key("transports").begin_object().key("start");
  json_transports(j, rec.transports_start);
  j.key("end");
  json_transports(j, rec.transports_end);
  j.key("changes").begin_array();
  for (const TransportChange& c : rec.changes) {
    j.begin_object().field("t_s", c.t_s).field("iteration", c.iteration).field("peer", c.peer);
    j.field("from", c.from).field("to", c.to).end_object();
  }
  j.end_array().end_object();
  j.key("checks");
  json_checks(j, mine);
  j.end_object();
  return j.str();
}

bool Report::write_json(const std::string& path, const std::vector<std::string>& ranks,
                        bool complete, const Verdict& job) const {
  core::JsonWriter j;
  j.begin_object().field("tool", "hcomm-chaos").field("complete", complete);
  j.key("ranks").begin_array();
  for (const std::string& r : ranks) j.raw(r);
  j.end_array();
  j.key("job_checks");
  json_checks(j, job);
  j.end_object();
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "hcomm-chaos: rank %d: -J: cannot write '%s': %s\n", rank_, path.c_str(),
                 std::strerror(errno));
    return false;
  }
  const bool ok = std::fputs(j.str().c_str(), f) >= 0 && std::fputc('\n', f) != EOF;
  if (std::fclose(f) != 0 || !ok) {
    std::fprintf(stderr, "hcomm-chaos: rank %d: -J: writing '%s' failed\n", rank_, path.c_str());
    return false;
  }
  return true;
}

}  // namespace hcomm::tools::chaos
