// The completion flag behind a Work handle: set once by the data plane, waited on by any thread.
//
// Waiting spins for a short bounded time (small operations finish within microseconds, and a
// futex sleep/wake-up costs more than that), then sleeps on a futex. No actor is involved.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>

#include "hcomm/status.hpp"
#include "hcomm/work.hpp"

namespace hcomm::detail {

class Completion {
 public:
  /// Sets the final status, wakes every waiter and runs the callback. Only the first call counts.
  void complete(Status status);
  /// False when the deadline passed first.
  bool wait_until(std::chrono::steady_clock::time_point deadline) const;
  bool done() const { return state_.load(std::memory_order_acquire) == kDone; }
  /// The final status; valid once done().
  const Status& status() const { return status_; }
  void on_complete(Work::Callback cb);

 private:
  static constexpr uint32_t kPending = 0;
  static constexpr uint32_t kDone = 1;
  mutable std::atomic<uint32_t> state_{kPending};
  Status status_;
  std::mutex callback_mutex_;  // guards callback_ against the race with complete()
  Work::Callback callback_;
  bool completing_ = false;
};

}  // namespace hcomm::detail
