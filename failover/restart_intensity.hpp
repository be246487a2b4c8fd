// The supervision helper CAF does not ship: OTP's restart intensity. More than `max` restarts
// (here: failovers) within `period` means the fault is not transient, and the supervisor stops
// restarting and escalates (here: the peer stays on its fallback link).
#pragma once

#include <chrono>
#include <deque>

namespace hcomm::failover {

class RestartIntensity {
 public:
  using Clock = std::chrono::steady_clock;

  RestartIntensity(int max, std::chrono::milliseconds period) : max_(max), period_(period) {}

  /// Records one restart at `now`; true when that makes more than `max` within the period.
  bool record(Clock::time_point now) {
    times_.push_back(now);
    while (!times_.empty() && now - times_.front() > period_) times_.pop_front();
    return static_cast<int>(times_.size()) > max_;
  }
  int max() const { return max_; }
  std::chrono::milliseconds period() const { return period_; }

 private:
  const int max_;
  const std::chrono::milliseconds period_;
  std::deque<Clock::time_point> times_;
};

}  // namespace hcomm::failover
