// The checks that decide hcomm-chaos's exit status: those of one rank (its results, its
// operations, its detection times, its final transports, ...) and those over all ranks
// (failovers and failbacks together, each fault detected somewhere, ranks agreeing).
#pragma once

#include <hcomm/hcomm.hpp>

#include <string>
#include <vector>

#include "chaos/analysis.hpp"
#include "chaos/fault_plan.hpp"
#include "chaos/injector.hpp"
#include "chaos/options.hpp"
#include "chaos/rank_summary.hpp"
#include "chaos/runner.hpp"

namespace hcomm::tools::chaos {

struct Check {
  std::string name;
  bool ok = false;
  std::string detail;
};

class Verdict {
 public:
  void add(const std::string& name, bool ok, const std::string& detail) {
    checks_.push_back({name, ok, detail});
  }
  bool ok() const;
  size_t failures() const;
  const std::vector<Check>& checks() const { return checks_; }

 private:
  std::vector<Check> checks_;
};

/// What one rank saw, for the per-rank checks.
struct RankView {
  int rank = 0;
  const RunRecord& rec;
  const Analysis& analysis;
  const FailoverStats& stats;
  const std::vector<int>& lost_peers;
  const std::vector<Injection>& injections;  ///< what this rank's injector did
  const std::vector<std::string>& injection_problems;
  const Config& config;
  bool checks_elements = true;  ///< Workload::checks_elements()
  /// --reference-s: GB/s in operations over the fallback's network alone (0: not measured).
  double reference_gbps = 0;
};

/// The checks every rank makes on its own figures.
Verdict judge_rank(const Options& o, const FaultPlan& plan, const RankView& v);

/// The checks over all ranks, on the summaries of those that could be gathered (every rank's
/// when `complete`, else this rank's own).
Verdict judge_job(const Options& o, const FaultPlan& plan,
                  const std::vector<RankSummary>& summaries, bool complete);

/// The time the PEER_LOST line compares with: --max-detect-ms, else HCOMM_PEER_TIMEOUT_MS.
double peer_lost_bound_ms(const Options& o, const Config& config);

}  // namespace hcomm::tools::chaos
