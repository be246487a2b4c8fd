// hcomm public API: QoS — bandwidth shares and priorities between communicators.
//
// Every communicator is a tenant with a traffic class: a minimum share of the bottleneck link it
// is guaranteed while it has traffic, a maximum it never exceeds, and a priority. The
// communicators of every process on a host share one bottleneck (HCOMM_LINK_GBPS): each gets its
// minimum, what is left goes to the busiest classes by priority, then in proportion to their
// minimums, up to each maximum; a class alone may use up to its maximum (work-conserving).
// hcomm enforces this in its send path (token buckets paced by a QoS controller) and marks its
// packets (DSCP on TCP, the traffic class on RoCE) so that the network can honour it too.
// Shares apply to traffic to other hosts; shared memory within a host is not shaped.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hcomm/status.hpp"

namespace hcomm {

struct HCOMM_API QosClass {
  int min_rate = 0;    ///< % of the link guaranteed while the communicator has traffic (0..100)
  int max_rate = 100;  ///< % of the link it never exceeds (1..100, >= min_rate)
  int priority = 0;    ///< 0..7, higher first for the bandwidth left over; DSCP class selector

  /// "min=30 max=70 priority=2".
  std::string to_string() const;
  /// The shape of every field (HCOMM_ERR_INVALID_ARG saying which and why).
  Status validate() const;
  /// "min=30,max=70,priority=2" (HCOMM_QOS): any subset of the keys, the others default.
  static Expected<QosClass> parse(const std::string& spec);
  /// Whether this is the default class (no minimum, no cap, priority 0).
  bool is_default() const { return min_rate == 0 && max_rate == 100 && priority == 0; }
  bool operator==(const QosClass& o) const {
    return min_rate == o.min_rate && max_rate == o.max_rate && priority == o.priority;
  }
};

/// A frame waiting for its turn to be sent, as a Scheduler sees it: the next one of each
/// communicator whose class may send now.
struct QosTask {
  uint64_t comm = 0;  ///< the communicator's id (the same on every rank of it)
  int priority = 0;
  size_t bytes = 0;
  std::chrono::steady_clock::time_point queued;
};

/// The order in which communicators that may all send take their turns (the pacing, i.e. how
/// much each may send, is the QoS controller's). Set with set_scheduler(); the default serves
/// higher priorities first and, within a priority, the frame queued first.
class HCOMM_API Scheduler {
 public:
  virtual ~Scheduler() = default;
  /// Reorders `tasks`: the first is sent next. Called on hcomm's progress thread, often: quick,
  /// no blocking, no hcomm calls.
  virtual void schedule(std::vector<QosTask>& tasks) = 0;
};

/// Process-wide; nullptr restores the default.
HCOMM_API void set_scheduler(std::shared_ptr<Scheduler> scheduler);

}  // namespace hcomm
