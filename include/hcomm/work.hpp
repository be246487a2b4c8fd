// hcomm public API: the handle of an asynchronous operation.
//
// Every operation returns a Work at once; the data plane completes it. Waiting costs no actor
// round trip: the waiting thread runs the progress engine itself for a bounded time
// (HCOMM_SPIN_US), then sleeps on a futex the progress engine wakes.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "hcomm/status.hpp"

namespace hcomm {

namespace core {
class Completion;
}

class HCOMM_API Work {
 public:
  using Callback = std::function<void(const Status&)>;

  Work() = default;
  explicit Work(std::shared_ptr<core::Completion> c) : c_(std::move(c)) {}

  /// Waits until the operation completes or `timeout` passes. Returns the operation's status,
  /// or HCOMM_ERR_TIMEOUT when the deadline passed first; the operation then stays in flight and
  /// its buffers must stay valid until it completes or its communicator is destroyed.
  Status wait(std::chrono::milliseconds timeout) const;
  /// True once the operation completed (successfully or not); never blocks.
  bool test() const;
  /// The final status; HCOMM_ERR_INTERNAL "still running" while test() is false.
  Status status() const;
  /// Runs `cb` once with the final status: at once on this thread if already complete, else on
  /// whichever thread drives hcomm's progress (its engine thread, or an application thread
  /// waiting for an operation), which it must not block.
  void on_complete(Callback cb) const;
  bool valid() const { return c_ != nullptr; }
  /// A receive from any source (Communicator::kAnySource): the rank whose message it took, once
  /// matched (at the latest when it completed successfully); -1 before, and for other operations.
  int source() const;
  /// When the data plane completed the operation (steady clock; an epoch of 0 before): the
  /// moment a callback's or a reply's latency is counted from.
  std::chrono::steady_clock::time_point completed_at() const;

 private:
  std::shared_ptr<core::Completion> c_;
};

}  // namespace hcomm
