// Where a ReliableLink takes the time from, and runs its deferred tasks and timers on: the
// progress engine and the steady clock (EngineScheduler), or, in unit tests, a clock and queue
// that the test moves by hand. Engine thread only: every method is called on the thread that
// runs the tasks.
#pragma once

#include <cstdint>
#include <functional>

#include "transport/progress_engine.hpp"

namespace hcomm::failover {

class Scheduler {
 public:
  using Clock = transport::ProgressEngine::Clock;
  using Task = transport::ProgressEngine::Task;
  using TimerId = transport::ProgressEngine::TimerId;

  virtual Clock::time_point now() const = 0;
  /// Runs `task` later, never inside this call (after the caller's stack unwound), in posting
  /// order.
  virtual void post(Task task) = 0;
  /// Runs `task` once `when` has come, never inside this call. Never returns 0.
  virtual TimerId add_timer(Clock::time_point when, Task task) = 0;
  /// Drops a timer that has not run; an id that ran or is unknown is ignored.
  virtual void cancel_timer(TimerId id) = 0;

 protected:
  ~Scheduler() = default;
};

/// The progress engine's tasks and timers and the steady clock.
class EngineScheduler final : public Scheduler {
 public:
  explicit EngineScheduler(transport::ProgressEngine& engine) : engine_(engine) {}
  Clock::time_point now() const override { return Clock::now(); }
  void post(Task task) override { engine_.post(std::move(task)); }
  TimerId add_timer(Clock::time_point when, Task task) override {
    return engine_.add_timer(when, std::move(task));
  }
  void cancel_timer(TimerId id) override { engine_.cancel_timer(id); }

 private:
  transport::ProgressEngine& engine_;
};

}  // namespace hcomm::failover
