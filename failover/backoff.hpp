// Reconnection backoff: exponential, doubling from `min` to `max`, with jitter so that the ranks
// that lost a link at the same moment do not retry in lockstep ("full jitter" in [d/2, d]).
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace hcomm::failover {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds min, std::chrono::milliseconds max, uint64_t seed)
      : min_(min), max_(max), next_(min), rng_(seed) {}

  /// The wait before the next attempt; each call doubles the one after (up to max).
  std::chrono::milliseconds next() {
    const auto d = next_;
    next_ = std::min(max_, next_ * 2);
    std::uniform_int_distribution<int64_t> jitter(d.count() / 2, d.count());
    return std::chrono::milliseconds(jitter(rng_));
  }
  /// An attempt succeeded: the next failure starts from `min` again.
  void reset() { next_ = min_; }

 private:
  const std::chrono::milliseconds min_;
  const std::chrono::milliseconds max_;
  std::chrono::milliseconds next_;
  std::mt19937_64 rng_;
};

}  // namespace hcomm::failover
