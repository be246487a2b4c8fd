// The link supervisor's decisions for one peer, as a plain class (the link_supervisor actor runs
// one per peer and carries out what it returns; tests drive it with a fake clock).
//
// The mechanism is the ReliableLink's (failover/reliable_link.hpp): it detects a dead link, moves
// traffic to the other link at once and replays. What needs judgement or waiting is here:
// - reconnecting a link that went down, after an exponential backoff with jitter;
// - moving traffic back to the primary once the data-path probe (link_probe.hpp) has shown it
//   healthy for HCOMM_FAILBACK_MS, and not before HCOMM_GRAY_HOLD_MS after a gray failure of
//   it (doubling with each further one within HCOMM_FAILOVER_LIMIT's window): the lower rank of
//   a pair probes and decides, the higher follows its switch;
// - under multi-path, letting a fallback that went down carry its share of large frames again
//   once the probe has shown it healthy for as long (an admission);
// - more than R failovers within T seconds: the peer stays on its fallback, the primary is no
//   longer reconnected (RestartIntensity, OTP's restart intensity);
// - no link up until the peer's last sign of life + HCOMM_PEER_TIMEOUT_MS: the peer is lost.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "failover/backoff.hpp"
#include "failover/restart_intensity.hpp"

namespace hcomm::failover {

/// The two links of a peer.
enum LinkSlot : int8_t { kNoSlot = -1, kPrimary = 0, kFallback = 1 };

/// What a ReliableLink tells its supervisor.
struct ChannelEvent {
  enum class Kind : uint8_t {
    up,             ///< `slot` is established (epoch: its link's number)
    down,           ///< `slot`'s link is gone (failed, or left behind by a switch)
    switched,       ///< traffic moved from `from` to `slot` (kNoSlot: no link carries any)
    redial_failed,  ///< a reconnection attempt of `slot` could not start or did not come up
    probe,          ///< a probe round on `slot` (epoch) ended: `passed` or not (`reason`)
  };
  int32_t peer = -1;
  Kind kind = Kind::up;
  int8_t slot = kNoSlot;
  int8_t from = kNoSlot;
  uint64_t epoch = 0;
  /// down: how long the peer had been silent on any link when it happened.
  int64_t silent_ms = 0;
  /// down: a gray failure (the link was up but sick); probe: the round passed.
  bool gray = false;
  bool passed = false;
  std::string reason;
};

/// Where a ReliableLink reports to its supervisor (ReliableLink::report(); engine thread, must not
/// block).
class ChannelListener {
 public:
  virtual void on_channel_event(const ChannelEvent& event) = 0;

 protected:
  ~ChannelListener() = default;
};

/// What the supervisor asks a ReliableLink to do.
struct SupervisorCommand {
  enum class Kind : uint8_t {
    redial,        ///< make `slot`'s link again
    activate,      ///< move traffic to `slot` (fail-back), if its link is still number `epoch`
    declare_lost,  ///< the peer is gone: fail everything involving it
    probe,         ///< probe `slot` from now on (kNoSlot: stop probing)
    admit,         ///< `slot` (link number `epoch`) carries its share of large frames again
  };
  Kind kind = Kind::redial;
  int8_t slot = kNoSlot;
  uint64_t epoch = 0;
  std::string reason;
};

class LinkSupervisor {
 public:
  using Clock = std::chrono::steady_clock;

  struct Params {
    /// This rank is the lower of the pair: it decides fail-backs.
    bool coordinator = false;
    /// The primary can be made again (application protocols' connections cannot).
    bool primary_redials = true;
    /// The probe must pass this long (every round) before a fail-back or an admission.
    std::chrono::milliseconds failback_after{600};
    /// After a gray failure of a link, no fail-back to it for at least this long (doubling with
    /// each further gray failure of it within failover_window, up to 16x).
    std::chrono::milliseconds gray_hold{1000};
    /// Both links carry large frames while healthy: a fallback that went down is probed before
    /// it is admitted again.
    bool multipath = false;
    std::chrono::milliseconds peer_timeout{5000};
    std::chrono::milliseconds reconnect_min{100};
    std::chrono::milliseconds reconnect_max{2000};
    int failover_limit = 5;
    std::chrono::milliseconds failover_window{30000};
    uint64_t seed = 1;
  };
  /// Call on_timer(token) at `when`.
  struct Timer {
    Clock::time_point when;
    uint64_t token = 0;
  };
  struct Output {
    std::vector<SupervisorCommand> commands;
    std::vector<Timer> timers;
    /// Happened just now: the failover limit was passed (the peer stays on its fallback).
    bool pinned = false;
  };

  explicit LinkSupervisor(const Params& params);

  Output on_event(const ChannelEvent& event, Clock::time_point now);
  Output on_timer(uint64_t token, Clock::time_point now);

  bool pinned() const { return pinned_; }
  bool lost() const { return lost_; }
  int8_t active() const { return active_; }

 private:
  enum Purpose : uint64_t { kRedial = 1, kLost = 3 };
  static uint64_t token(Purpose p, int slot, uint64_t gen) {
    return static_cast<uint64_t>(p) << 56 | static_cast<uint64_t>(slot & 0xff) << 48 |
           (gen & 0xffffffffffffull);
  }
  void schedule_redial(int slot, Clock::time_point now, Output& out);
  /// The slot the probe should measure now (kNoSlot: none); commands a change.
  void aim_probe(Output& out);
  void on_probe(const ChannelEvent& e, Clock::time_point now, Output& out);
  /// A gray failure of `slot` now: when a fail-back to it may come at the earliest.
  void hold_after_gray(int slot, Clock::time_point now);

  const Params params_;
  std::array<bool, 2> up_{};
  /// May carry traffic (the active link) or large frames (multi-path) without a probe first:
  /// both links at creation; a link made again only once it was switched to or admitted.
  std::array<bool, 2> admitted_{{true, true}};
  int8_t probing_ = kNoSlot;
  Clock::time_point passing_since_{};  // the probe's target has passed every round since then
  std::array<Clock::time_point, 2> hold_until_{};
  std::array<std::vector<Clock::time_point>, 2> gray_times_;
  std::array<uint64_t, 2> epoch_{};
  std::array<uint64_t, 2> redial_gen_{};
  std::array<Backoff, 2> backoff_;
  RestartIntensity intensity_;
  int8_t active_ = kNoSlot;
  uint64_t lost_gen_ = 0;
  bool pinned_ = false;
  bool lost_ = false;
};

}  // namespace hcomm::failover
