// qos/: bandwidth shares between communicators. The QoS controller (qos_controller.hpp) reads
// every class of the host from the HostBoard, divides the link with allocate_shares() and paces
// this process's classes through the SendGate (token buckets, Scheduler order); PacedLink puts a
// communicator's sends through the gate.
//
// This file: how a link's capacity is divided among the classes that have traffic — the
// scheduler's weights, computed as rates:
// 1. every active class gets its minimum (the minimums of a host add up to 100% at most);
// 2. what is left goes to the highest priority level first, shared within a level in proportion
//    to the classes' minimums (equally when they have none), each up to its maximum — weighted
//    max-min fairness, the share deficit round robin converges to; a level that cannot use it
//    all leaves the rest to the next;
// 3. a class without traffic gets its minimum, so that it can start at once (the others give
//    way at the next computation, a few milliseconds later);
// 4. a class that sends less than it is given (not backlogged) is given its minimum or a little
//    more than it sends, whichever is more: what it leaves goes to the others (work-conserving
//    with a latency-sensitive class that sends little).
#pragma once

#include <vector>

namespace hcomm::qos {

struct ClassDemand {
  int min_rate = 0;  ///< %
  int max_rate = 100;
  int priority = 0;
  bool active = false;  ///< has traffic now
  /// What it would send at most (same unit as the capacity); the default: all it is given.
  double demand = 1e300;
};

/// Rates, in the unit of `capacity`, by class (same order as `classes`).
std::vector<double> allocate_shares(double capacity, const std::vector<ClassDemand>& classes);

}  // namespace hcomm::qos
