// What one rank's run means: the link events on the run's clock, each fault's detection and
// recovery, and the throughput before, during and after the faults.
#pragma once

#include <hcomm/hcomm.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "chaos/fault_plan.hpp"
#include "chaos/runner.hpp"

namespace hcomm::tools::chaos {

/// A LinkEvent with its time from the start.
struct TimedEvent {
  double t_s = 0;
  LinkEvent event;
};

/// The first failover, link_down or peer_lost event after a fault (and before the next fault).
struct Detection {
  double after_ms = 0;  ///< from the fault's time
  TimedEvent first;
};

struct FaultFigures {
  bool victim = false;  ///< this rank was the one stopped or killed: it judges nothing
  std::optional<Detection> detection;
  /// From the fault's time to the end of the first iteration that completed after the
  /// detection.
  std::optional<double> recovery_ms;
  /// The longest iteration that overlapped the fault (from its time to its end or recovery).
  double longest_op_ms = 0;
  /// Traffic switches (failover and failback events) from its time to the next fault's.
  uint64_t switches = 0;
};

struct Window {
  std::string name;  ///< "before", "during", "after", or "run" without faults
  double from_s = 0, to_s = 0;
  size_t iterations = 0;  ///< iterations that started in it
  double median_ms = 0;   ///< of their durations (0 without any)
  double algbw_gbps = 0;  ///< bytes / median time, 1 GB = 1e9 B
  double iters_per_s = 0;
  /// bytes x iterations / the time they took together: what the window delivered, stalls
  /// included (the median above ignores them).
  double gbps_in_ops = 0;
};

/// GB/s in operations of all of `rec`'s iterations (the reference run's figure).
double gbps_in_ops(const RunRecord& rec, size_t bytes);

struct Analysis {
  std::vector<TimedEvent> events;
  std::vector<FaultFigures> faults;  ///< by FaultPlan index
  std::vector<Window> windows;
  /// The loop ended with HCOMM_ERR_PEER_LOST: how long after the kill (or fault) it came.
  std::optional<double> peer_lost_after_ms;
};

/// `start`: the system-clock time of the start barrier (link events carry system-clock times).
Analysis analyze(const FaultPlan& plan, const RunRecord& rec, const FailoverStats& stats,
                 std::chrono::system_clock::time_point start, size_t bytes, int rank);

/// Whether an event of this kind says that a fault was noticed.
bool is_detection(LinkEvent::Kind kind);

}  // namespace hcomm::tools::chaos
