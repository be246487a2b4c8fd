#include "failover/keepalive_detector.hpp"

#include <algorithm>
#include <cmath>

namespace hcomm::failover {

KeepaliveDetector::KeepaliveDetector(std::chrono::milliseconds interval,
                                     std::chrono::milliseconds timeout, double phi_threshold)
    : interval_(interval), timeout_(timeout), phi_threshold_(phi_threshold) {}

void KeepaliveDetector::reset(Clock::time_point now) {
  last_ = now;
  last_sample_ = now;
  samples_ = 0;
}

void KeepaliveDetector::heard(Clock::time_point now) {
  last_ = now;
  // A busy link delivers frames microseconds apart; phi is about the heartbeat cadence, so only
  // gaps of at least half an interval are samples (a burst counts as one arrival).
  const auto gap = now - last_sample_;
  if (gap < interval_ / 2) return;
  gaps_ms_[samples_ % kWindow] = std::chrono::duration<double, std::milli>(gap).count();
  ++samples_;
  last_sample_ = now;
}

double KeepaliveDetector::phi(Clock::time_point now) const {
  const size_t n = std::min(samples_, kWindow);
  if (n < kMinSamples) return 0;
  double mean = 0;
  for (size_t i = 0; i < n; ++i) mean += gaps_ms_[i];
  mean /= static_cast<double>(n);
  double var = 0;
  for (size_t i = 0; i < n; ++i) var += (gaps_ms_[i] - mean) * (gaps_ms_[i] - mean);
  // A floor on the deviation: perfectly regular heartbeats would otherwise make any jitter look
  // like a failure (Akka uses the same guard).
  const double sd = std::max(std::sqrt(var / static_cast<double>(n)), mean / 4);
  const double t = std::chrono::duration<double, std::milli>(now - last_).count();
  // P(gap > t) under a normal distribution of gaps; phi = -log10 of it.
  const double p_later = 0.5 * std::erfc((t - mean) / (sd * std::sqrt(2.0)));
  return -std::log10(std::max(p_later, 1e-300));
}

bool KeepaliveDetector::dead(Clock::time_point now) const {
  if (now - last_ >= timeout_) return true;
  return phi_threshold_ > 0 && phi(now) >= phi_threshold_;
}

}  // namespace hcomm::failover
