// What hcomm-chaos prints and writes: rank 0's header (workload, failover settings, schedule),
// every rank's own lines after the run, rank 0's detailed report and the table over all ranks,
// the checks, and the JSON figures (-J).
#pragma once

#include <hcomm/hcomm.hpp>

#include <string>
#include <vector>

#include "chaos/analysis.hpp"
#include "chaos/fault_plan.hpp"
#include "chaos/injector.hpp"
#include "chaos/options.hpp"
#include "chaos/rank_summary.hpp"
#include "chaos/verdict.hpp"
#include "chaos/workload.hpp"

namespace hcomm::tools::chaos {

class Report {
 public:
  Report(const Options& o, const FaultPlan& plan, const Workload& w, const Communicator& comm);

  /// Rank 0, before the start.
  void header() const;
  /// Every rank, after the run: the PEER_LOST line, the transports at the end, and a summary
  /// line, or on rank 0 the detailed report of its own figures.
  void rank_figures(const RankView& v) const;
  /// Rank 0, when every rank's figures were gathered: one line per rank, each fault's detection
  /// on every rank.
  void job_table(const std::vector<RankSummary>& all) const;
  /// Every rank's own checks (rank 0: all of them, others: the failed ones); the job's (rank 0,
  /// or every rank when figures could not be gathered); the final line.
  void verdict(const Verdict& mine, const Verdict& job, bool prints_job) const;

  /// This rank's figures as a JSON object.
  std::string rank_json(const RankView& v, const Verdict& mine) const;
  /// The file of -J: {"tool", "complete", "ranks": [...], "job_checks": [...]}. False (with a
  /// message) when it cannot be written.
  bool write_json(const std::string& path, const std::vector<std::string>& ranks, bool complete,
                  const Verdict& job) const;

 private:
  const Options& o_;
  const FaultPlan& plan_;
  const Workload& w_;
  int rank_, size_;
  const Config& config_;
  std::string algorithm_;
};

}  // namespace hcomm::tools::chaos
