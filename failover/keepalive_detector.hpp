// Failure detection for one link: is the peer still there? Every frame that arrives counts as a
// sign of life (heartbeats keep an idle link talking). The link is dead once nothing arrived for
// the keep-alive timeout, or — as an option — once the phi-accrual suspicion level passes a
// threshold (Hayashibara et al.: phi = -log10 P(a gap this long | the gaps seen so far)), which
// adapts to how regularly this peer's frames arrive. Engine thread only; no clock of its own.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>

namespace hcomm::failover {

class KeepaliveDetector {
 public:
  using Clock = std::chrono::steady_clock;

  /// `interval`: how often the peer sends heartbeats when idle (sets phi's sampling);
  /// `phi_threshold` 0: the timeout alone.
  KeepaliveDetector(std::chrono::milliseconds interval, std::chrono::milliseconds timeout,
                    double phi_threshold);

  /// The link (re)started: it counts as heard now, and the gaps seen so far are forgotten.
  void reset(Clock::time_point now);
  /// A frame arrived.
  void heard(Clock::time_point now);
  Clock::time_point last_heard() const { return last_; }
  std::chrono::milliseconds silence(Clock::time_point now) const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(now - last_);
  }
  /// The suspicion level now (0 while fewer than kMinSamples gaps were seen).
  double phi(Clock::time_point now) const;
  /// Dead: silent past the timeout, or phi over its threshold.
  bool dead(Clock::time_point now) const;

  static constexpr size_t kWindow = 64;     ///< gaps remembered for phi
  static constexpr size_t kMinSamples = 8;  ///< gaps needed before phi means anything

 private:
  const Clock::duration interval_;
  const Clock::duration timeout_;
  const double phi_threshold_;
  Clock::time_point last_{};
  Clock::time_point last_sample_{};
  std::array<double, kWindow> gaps_ms_{};
  size_t samples_ = 0;
};

}  // namespace hcomm::failover
