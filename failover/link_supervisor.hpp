// The link supervisor's decisions for one peer, as a plain class (the link_supervisor actor runs
// one per peer and carries out what it returns; tests drive it with a fake clock).
//
// The mechanism is the ReliableLink's (failover/reliable_link.hpp): it detects a dead link, moves
// traffic to the other link at once and replays. What needs judgement or waiting is here:
// - reconnecting a link that went down, after an exponential backoff with jitter;
// - moving traffic back to the primary once it has carried heartbeats for HCOMM_FAILBACK_MS
//   (the lower rank of a pair decides; the higher follows its switch);
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
  };
  int32_t peer = -1;
  Kind kind = Kind::up;
  int8_t slot = kNoSlot;
  int8_t from = kNoSlot;
  uint64_t epoch = 0;
  /// down: how long the peer had been silent on any link when it happened.
  int64_t silent_ms = 0;
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
    std::chrono::milliseconds failback_after{600};
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
  enum Purpose : uint64_t { kRedial = 1, kFailback = 2, kLost = 3 };
  static uint64_t token(Purpose p, int slot, uint64_t gen) {
    return static_cast<uint64_t>(p) << 56 | static_cast<uint64_t>(slot & 0xff) << 48 |
           (gen & 0xffffffffffffull);
  }
  void schedule_redial(int slot, Clock::time_point now, Output& out);
  void maybe_schedule_failback(Clock::time_point now, Output& out);

  const Params params_;
  std::array<bool, 2> up_{};
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
