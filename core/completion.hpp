// The completion flag behind a Work handle: set once by the data plane, waited on by any thread.
//
// A waiter first drives the progress engine itself for a bounded time (ProgressDriver: small
// operations finish within microseconds, and two sleep/wake-ups cost more than that), then
// sleeps on a futex. No actor is involved.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "hcomm/status.hpp"
#include "hcomm/work.hpp"

namespace hcomm::core {

class Completion;

/// Runs progress on a waiting thread (the communicator's engine, behind this interface so that
/// the API layer does not depend on the transport's).
class ProgressDriver {
 public:
  virtual ~ProgressDriver() = default;
  /// Busy polls on the calling thread until `c` is done, `deadline`, or the driver's spin budget
  /// has passed; the caller then sleeps.
  virtual void drive(const Completion& c, std::chrono::steady_clock::time_point deadline) = 0;
};

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
  /// Who progresses the operation while a thread waits (not owned: a Work may outlive its
  /// communicator, and then waits without driving).
  void set_driver(std::weak_ptr<ProgressDriver> driver) { driver_ = std::move(driver); }
  /// When complete() ran (steady clock); valid once done().
  std::chrono::steady_clock::time_point completed_at() const { return completed_at_; }
  /// A receive from any source: the rank whose message it took (set before it completes).
  void set_source(int rank) { source_.store(rank, std::memory_order_release); }
  int source() const { return source_.load(std::memory_order_acquire); }

 private:
  static constexpr uint32_t kPending = 0;
  static constexpr uint32_t kDone = 1;
  static constexpr uint32_t kWaited = 2;  // pending, and a thread sleeps on it: wake it
  mutable std::atomic<uint32_t> state_{kPending};
  Status status_;
  std::chrono::steady_clock::time_point completed_at_{};
  std::mutex callback_mutex_;  // guards callback_ against the race with complete()
  Work::Callback callback_;
  bool completing_ = false;
  std::weak_ptr<ProgressDriver> driver_;
  std::atomic<int> source_{-1};
};

}  // namespace hcomm::core
