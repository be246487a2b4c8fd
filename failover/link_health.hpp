// How healthy one of a ReliableLink's links is, measured continuously from what it carries:
// - goodput in: the payload bytes of the peer's data frames over the time during which one was
//   arriving (transport::MediumCounters::bytes_received, receiving_us), over a sliding window;
//   its best window while the link was healthy is the link's healthy goodput. Measured where the
//   bytes arrive, it does not depend on acknowledgements, which queue behind data going the
//   other way;
// - goodput out: delivery-rate samples of this side's in-place frames (the large ones,
//   acknowledged at once), as TCP BBR takes them (the bytes acknowledged between the
//   acknowledgement that came last before a frame was sent and the frame's own, over the longer
//   of that interval and the frames' sending interval); a window's is its best sample. For
//   planning the multi-path split and for the figures;
// - round trip: from the timestamps every channel message carries and echoes (smoothed,
//   minimum, and the recent ones taken while neither side had frames waiting on the link);
// - loss: what the medium counts (TCP_INFO retransmits, an RDMA port's retries and error
//   counters), as a share of the packets sent over the window;
// - probes: the goodput of the last bulk probe round (failover/link_probe.hpp).
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
  /// Sick when, over a window during which the peer's frames arrived the whole time, they
  /// arrived at less than this share of the link's healthy goodput (and slower than the other
  /// link's healthy goodput).
  double goodput_ratio = 0.25;
  /// Sick when the medium resent at least this share of the packets it sent over the window
  /// (and sent at least kMinPackets).
  double loss_ratio = 0.10;
  /// Sick when each of the last kRttSamples round trips taken while neither side had frames
  /// waiting on the link exceeded this (and 10x the link's smallest round trip).
  std::chrono::milliseconds rtt_limit{100};
};

/// A snapshot of the figures, for failover_stats() and the logs. Rates in bytes per second.
struct HealthFigures {
  double goodput_in_bps = 0;   ///< the last window's; 0: nothing arrived
  double busy_in_share = 0;    ///< share of that window during which frames arrived
  double healthy_in_bps = 0;   ///< the best window while healthy; 0: never measured
  double goodput_out_bps = 0;  ///< the last window's best delivery-rate sample; 0: none
  double healthy_out_bps = 0;
  double probe_bps = 0;  ///< the last probe round's goodput; 0: never probed
  double srtt_us = 0;    ///< smoothed round trip; 0: none measured yet
  double min_rtt_us = 0;
  double medium_rtt_us = 0;   ///< the medium's own (TCP's), 0: none
  double loss = 0;            ///< retransmitted share of the window's packets
  uint64_t packets_sent = 0;  ///< since the slot's first link, all its links together
  uint64_t retransmits = 0;
  uint64_t errors = 0;
  uint64_t bytes_in = 0;     ///< data payload received, all its links together
  uint64_t bytes_acked = 0;  ///< in-place payload the peer acknowledged
};

/// What a frame remembers of its link when it is sent, for its delivery-rate sample.
struct DeliveryStamp {
  using Clock = std::chrono::steady_clock;
  uint64_t delivered = 0;               ///< the link's bytes acknowledged by then
  Clock::time_point delivered_time{};   ///< when the last of them was
  Clock::time_point first_sent_time{};  ///< when the frame acknowledged last was sent
  Clock::time_point sent_time{};
};

class LinkHealth {
 public:
  using Clock = std::chrono::steady_clock;

  /// Packets the medium must have sent over a window for its loss share to count.
  static constexpr uint64_t kMinPackets = 200;
  /// Idle round trips that must all exceed the limit.
  static constexpr size_t kRttSamples = 5;
  /// Frames must have arrived during this share of the window for its goodput to judge the link.
  static constexpr double kBusyShare = 0.9;
  /// A window's goodput in counts toward the healthy figure once frames arrived this long in it.
  static constexpr std::chrono::milliseconds kMinBusy{20};
  /// A delivery-rate sample over a shorter interval than this is not taken (timer noise).
  static constexpr std::chrono::microseconds kMinInterval{500};

  explicit LinkHealth(const GrayParams& params) : params_(params) {}

  // ---- what the link carries
  /// An in-place frame of `bytes` was handed to the link: what it keeps for on_acked().
  DeliveryStamp on_sent(uint64_t bytes, Clock::time_point now);
  /// Such a frame was acknowledged.
  void on_acked(uint64_t bytes, const DeliveryStamp& stamp, Clock::time_point now);
  /// Such a frame left the link unacknowledged (sent again elsewhere).
  void on_withdrawn(uint64_t bytes);
  /// A round trip measured from a channel message's echo; `idle`: neither side had frames
  /// waiting on the link.
  void on_round_trip(std::chrono::microseconds rtt, bool idle);
  /// The link's counters now (they restart with each new link: see restart()).
  void on_medium(const transport::MediumCounters& counters);
  /// A probe round's goodput (bytes both ways over its duration).
  void on_probe(double bytes_per_second) { probe_bps_ = bytes_per_second; }
  /// A new link in this slot: nothing waits on it, its counters count from 0; the healthy
  /// figures stay.
  void restart();
  /// Closes the measurement up to `now`: call every engine tick.
  void tick(Clock::time_point now);

  // ---- figures
  uint64_t outstanding() const { return outstanding_; }
  double healthy_in_bps() const { return healthy_in_bps_; }
  /// The rate to plan sends with: the window's goodput out when it has a sample, else the best
  /// seen, else the last probe's; 0: unknown.
  double planning_bps() const;
  HealthFigures figures() const;

  /// Why the link is sick now ("frames arrived at 0.02 Gbit/s over 300 ms, 3% of its healthy
  /// 5.91"), or "" when it is not. `other_bps`: the other link's healthy goodput in (0:
  /// unknown); `judge_goodput` false: slow arrivals say nothing (the peer paces its traffic).
  std::string sick(double other_bps, bool judge_goodput = true) const;

 private:
  struct Bucket {
    Clock::time_point start;
    Clock::time_point end;
    uint64_t bytes_in = 0;
    double busy_in_s = 0;
    double best_out_bps = 0;  // the best delivery-rate sample
    uint64_t packets = 0;
    uint64_t retransmits = 0;
  };
  struct Window {
    double span_s = 0;
    uint64_t bytes_in = 0;
    double busy_in_s = 0;
    double best_out_bps = 0;
    uint64_t packets = 0;
    uint64_t retransmits = 0;
    double in_bps() const { return busy_in_s > 0 ? static_cast<double>(bytes_in) / busy_in_s : 0; }
  };
  Window window() const;
  bool lossy(const Window& w) const;

  const GrayParams params_;
  // sending
  uint64_t outstanding_ = 0;
  uint64_t delivered_ = 0;  // bytes acknowledged on this slot, all its links
  Clock::time_point delivered_time_{};
  Clock::time_point first_sent_time_{};
  // the window
  Bucket open_;
  std::deque<Bucket> closed_;
  double healthy_in_bps_ = 0;
  double healthy_out_bps_ = 0;
  double probe_bps_ = 0;
  double srtt_us_ = 0;
  double min_rtt_us_ = 0;
  std::deque<double> idle_rtts_us_;
  // the link's counters as last read, and the totals of the links before it
  transport::MediumCounters last_{};
  transport::MediumCounters before_{};
};

}  // namespace hcomm::failover
