// A token bucket that paces one traffic class: `rate` bytes per second, up to `burst` bytes
// saved while idle. A frame may start whenever the bucket is not in debt, and takes its whole
// size (the bucket may go negative): frames are never split, and over time the class sends at
// its rate exactly. Engine thread only.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace hcomm::qos {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  TokenBucket(double rate, double burst, Clock::time_point now)
      : rate_(rate), burst_(burst), tokens_(burst), last_(now) {}

  /// A new rate from now on (what was saved so far stays, up to the burst).
  void set_rate(double rate, Clock::time_point now) {
    refill(now);
    rate_ = rate;
  }
  double rate() const { return rate_; }
  /// Whether a frame may start now.
  bool ready(Clock::time_point now) {
    refill(now);
    return tokens_ > 0;
  }
  /// A frame of `bytes` starts now.
  void take(size_t bytes, Clock::time_point now) {
    refill(now);
    tokens_ -= static_cast<double>(bytes);
  }
  /// When the bucket is out of debt (now when it is).
  Clock::time_point ready_at(Clock::time_point now) {
    refill(now);
    if (tokens_ > 0) return now;
    const double seconds = rate_ > 0 ? (1.0 - tokens_) / rate_ : 1e300;
    if (seconds > 1e6) return now + std::chrono::seconds(1000000);  // a rate of 0, or next to it
    // Rounded up: above 1 GB/s a byte takes less than the clock's nanosecond.
    return now + std::chrono::ceil<Clock::duration>(std::chrono::duration<double>(seconds));
  }

 private:
  void refill(Clock::time_point now) {
    if (now <= last_) return;
    tokens_ =
        std::min(burst_, tokens_ + rate_ * std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }

  double rate_;
  double burst_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace hcomm::qos
