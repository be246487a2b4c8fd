// How healthy one of a ReliableLink's links is, measured continuously from what it carries:
// - goodput: the payload of in-place frames (the large ones, acknowledged at once) that the peer
//   acknowledged, divided by the time during which such frames waited on the link, over a
//   sliding window; its best value while the link was healthy is the link's healthy goodput;
// - round trip: from the timestamps every channel message carries and echoes (smoothed, minimum,
//   and the recent ones taken while nothing of this side's waited on the link);
// - loss: what the medium itself counts (transport::MediumCounters: TCP_INFO retransmits, an
//   RDMA port's retries and error counters), as a share of the packets sent over the window;
// - probes: the goodput of the last bulk probe round (failover/link_probe.hpp) and the best one.
// sick() turns these into a verdict against configurable thresholds (HCOMM_GRAY_*), which the
// ReliableLink acts on (a gray failure: the link is treated as failed). The figures outlive the
// link instances of one slot: a reconnected link starts with the healthy figures of the one
// before it (same path, same capacity).
//
// No clock of its own; engine thread only. Pure: unit-tested with made-up times and counters.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

#include "transport/link.hpp"

namespace hcomm::failover {

/// The thresholds of a gray failure (Config: HCOMM_GRAY_*); 0 turns a criterion off.
struct GrayParams {
  /// The window goodput and loss are measured over.
  std::chrono::milliseconds window{300};
  /// Sick when, over a window in which frames waited the whole time, the link delivered less
  /// than this share of its healthy goodput (and less than the other link's healthy goodput).
  double goodput_ratio = 0.25;
  /// Sick when the medium resent at least this share of the packets it sent over the window
  /// (and sent at least kMinPackets).
  double loss_ratio = 0.10;
  /// Sick when each of the last kRttSamples round trips taken while nothing of this side's
  /// waited on the link exceeded this (and 10x the link's smallest round trip).
  std::chrono::milliseconds rtt_limit{100};
};

/// A snapshot of the figures, for failover_stats() and the logs.
struct HealthFigures {
  double goodput_bps = 0;  ///< over the last window's waiting time; 0: nothing waited
  double busy_share = 0;   ///< share of the window during which frames waited
  double healthy_bps = 0;  ///< the best window goodput while healthy; 0: never measured
  double probe_bps = 0;    ///< the last probe round's goodput; 0: never probed
  double srtt_us = 0;      ///< smoothed round trip; 0: none measured yet
  double min_rtt_us = 0;
  double medium_rtt_us = 0;   ///< the medium's own (TCP's), 0: none
  double loss = 0;            ///< retransmitted share of the window's packets
  uint64_t packets_sent = 0;  ///< since the slot's first link, all its links together
  uint64_t retransmits = 0;
  uint64_t errors = 0;
  uint64_t acked_bytes = 0;  ///< in-place payload acknowledged on this slot, since creation
};

class LinkHealth {
 public:
  using Clock = std::chrono::steady_clock;

  /// Packets the medium must have sent over a window for its loss share to count.
  static constexpr uint64_t kMinPackets = 200;
  /// Idle round trips that must all exceed the limit.
  static constexpr size_t kRttSamples = 5;
  /// Frames must have waited this share of the window for its goodput to judge the link.
  static constexpr double kBusyShare = 0.9;
  /// A window's goodput counts toward the healthy figure once frames waited this long in it
  /// (shorter waits measure the edges of the window more than the link).
  static constexpr std::chrono::milliseconds kMinBusy{50};

  explicit LinkHealth(const GrayParams& params) : params_(params) {}

  // ---- what the link carries
  /// An in-place frame of `bytes` was handed to the link.
  void on_sent(uint64_t bytes, Clock::time_point now);
  /// Such a frame was acknowledged.
  void on_acked(uint64_t bytes, Clock::time_point now);
  /// Such a frame left the link unacknowledged (sent again elsewhere).
  void on_withdrawn(uint64_t bytes, Clock::time_point now);
  /// A round trip measured from a channel message's echo.
  void on_round_trip(std::chrono::microseconds rtt);
  /// The medium's counters now (they restart with each new link: see restart()).
  void on_medium(const transport::MediumCounters& counters);
  /// A probe round's goodput (bytes both ways over its duration).
  void on_probe(double bytes_per_second);
  /// A new link in this slot: nothing waits on it, its medium counts from 0; the healthy
  /// figures stay.
  void restart(Clock::time_point now);
  /// Closes the measurement up to `now`: call every engine tick.
  void tick(Clock::time_point now);

  // ---- figures
  uint64_t outstanding() const { return outstanding_; }
  double goodput_bps() const;
  double healthy_bps() const { return healthy_bps_; }
  double probe_bps() const { return probe_bps_; }
  /// The rate to plan with: the window's goodput once frames waited kMinBusy in it, else the
  /// healthy goodput, else the last probe's; 0: unknown.
  double planning_bps() const;
  HealthFigures figures() const;

  /// Why the link is sick now ("goodput 0.02 Gbit/s over 300 ms, 3% of its healthy 5.91"), or
  /// "" when it is not. `other_bps`: what the other link offers (its healthy goodput; 0:
  /// unknown); `cap_bps`: a pacing limit on this link (0: none).
  std::string sick(double other_bps, double cap_bps) const;

 private:
  struct Bucket {
    Clock::time_point start;
    Clock::time_point end;
    double busy_s = 0;
    uint64_t acked = 0;
    uint64_t packets = 0;
    uint64_t retransmits = 0;
  };
  /// Adds the waiting time up to `now` to the open bucket.
  void account(Clock::time_point now);
  struct Window {
    double span_s = 0;
    double busy_s = 0;
    uint64_t acked = 0;
    uint64_t packets = 0;
    uint64_t retransmits = 0;
  };
  Window window() const;

  const GrayParams params_;
  uint64_t outstanding_ = 0;
  Clock::time_point busy_from_{};  // when the waiting time was last accounted (while waiting)
  Bucket open_;
  std::deque<Bucket> closed_;
  double healthy_bps_ = 0;
  double probe_bps_ = 0;
  double srtt_us_ = 0;
  double min_rtt_us_ = 0;
  std::deque<double> idle_rtts_us_;
  // the medium: the current link's counters, and the totals of the links before it
  transport::MediumCounters last_{};
  uint64_t base_packets_ = 0;
  uint64_t base_retransmits_ = 0;
  uint64_t base_errors_ = 0;
  double medium_rtt_us_ = 0;
  uint64_t acked_total_ = 0;
};

}  // namespace hcomm::failover
