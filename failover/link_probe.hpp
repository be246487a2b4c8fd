// Bulk probes of a link's data path: how a link that traffic left (a failover, a gray failure)
// shows it is healthy again before traffic goes back to it — heartbeats alone get through a
// lossy or throttled path that data cannot use.
//
// A round sends `bytes` as probe frames (transport::kFrameProbe, pieces of kPieceBytes, dropped
// by the peer's reliable channel) on one link; the peer sends as many back on that link once all
// arrived (ProbeEcho); the round's goodput is both ways' bytes over the time from its start to
// the last echo. Rounds on the probed link (the target) alternate with a round on the link that
// carries traffic now (the reference) every kReferenceEvery rounds. A target round passes when
// the best of the target's last kKeepRounds rounds reaches `pass_ratio` of the best of the
// reference's — the same probe over the same hosts, so the probe's own overheads cancel out —
// or of the target's own healthy goodput when that is lower (a primary slower than its fallback
// by nature, soft-RoCE against loopback TCP, must only be as fast as it was). Best-of filters,
// because a busy core or a sleeping engine only ever makes a round slower: a healthy link gives
// a fast round now and then, a lossy or throttled one never does. A round that is not echoed
// within `timeout` fails (goodput 0). One round is out at a time, `interval` after the last
// ended.
//
// Who runs it: the coordinator of a pair (the lower rank), while its link supervisor asks; the
// supervisor turns verdicts into a fail-back once the target passed for HCOMM_FAILBACK_MS. Pure
// logic, no clock or I/O of its own (the ReliableLink sends the pieces); engine thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "failover/link_supervisor.hpp"

namespace hcomm::failover {

struct ProbeParams {
  uint64_t bytes = uint64_t{1} << 20;       ///< HCOMM_PROBE_BYTES: each way, per round
  std::chrono::milliseconds interval{100};  ///< HCOMM_PROBE_INTERVAL_MS: between rounds
  std::chrono::milliseconds timeout{800};   ///< a round not echoed by then fails
  double pass_ratio = 0.25;                 ///< of the reference's best recent goodput
};

class LinkProbe {
 public:
  using Clock = std::chrono::steady_clock;
  /// Probe frames carry at most this much each.
  static constexpr uint64_t kPieceBytes = 64 * 1024;
  /// Every this many rounds one measures the reference link.
  static constexpr uint64_t kReferenceEvery = 5;
  /// The rounds of each link whose best counts.
  static constexpr size_t kKeepRounds = 3;

  /// A round to send now: `bytes` on `slot`, numbered `round`.
  struct Start {
    int slot = kNoSlot;
    uint64_t round = 0;
    uint64_t bytes = 0;
  };
  /// How a round on the target went.
  struct Verdict {
    int slot = kNoSlot;
    bool passed = false;
    double bps = 0;            ///< its goodput (bytes/s, both ways)
    double reference_bps = 0;  ///< what it was judged against (see above)
    double best_bps = 0;       ///< the target's best recent round
    std::string why;           ///< for logs: "0.41 of the reference", "not echoed within 800 ms"
  };
  /// What a finished round measured (target or reference), for the link's health figures.
  struct Measured {
    int slot = kNoSlot;
    double bps = 0;
  };

  explicit LinkProbe(const ProbeParams& params) : params_(params) {}

  /// Probes `target` against `reference` from now on; kNoSlot stops probing. A round out on
  /// another aim is forgotten (its echo is ignored).
  void aim(int target, int reference);
  int target() const { return target_; }

  /// The round to start at `now`, if one is due (none while one is out).
  std::optional<Start> next(Clock::time_point now);
  /// The echo of `round` on `slot` brought `bytes` more. When that completes the round: what it
  /// measured, and for a target round the verdict. `target_healthy_bps`: the target's healthy
  /// goodput (LinkHealth; 0: unknown).
  std::optional<Verdict> on_echo(int slot, uint64_t round, uint64_t bytes, Clock::time_point now,
                                 double target_healthy_bps, Measured* measured);
  /// The round out, failed once past the timeout (a target round's verdict; a reference round
  /// fails silently and is made again).
  std::optional<Verdict> check_timeout(Clock::time_point now, double target_healthy_bps);

 private:
  struct Round {
    uint64_t id = 0;
    int slot = kNoSlot;
    Clock::time_point start{};
    uint64_t got = 0;  // echoed so far
  };

  const ProbeParams params_;
  int target_ = kNoSlot;
  int reference_ = kNoSlot;
  std::optional<Round> out_;
  Clock::time_point last_end_{};
  uint64_t next_id_ = 1;
  /// Verdict of a target round that measured `bps`.
  Verdict judge(int slot, double bps, double target_healthy_bps, std::string why);

  uint64_t rounds_ = 0;            // started since aim()
  std::deque<double> target_bps_;  // the last kKeepRounds of each
  std::deque<double> reference_bps_;
};

/// The answering side of probes on one link: counts the pieces of the peer's latest round and
/// says when the whole round has arrived (then it is echoed).
class ProbeEcho {
 public:
  /// A piece of `bytes` of round `round` (of `total` bytes) arrived: true when that completes the
  /// round. Pieces of rounds older than the latest are ignored.
  bool on_piece(uint64_t round, uint64_t bytes, uint64_t total) {
    if (round < round_) return false;
    if (round > round_) {
      round_ = round;
      got_ = 0;
    }
    got_ += bytes;
    return got_ == total;
  }
  /// The link was made again: its rounds start over.
  void reset() { round_ = 0, got_ = 0; }

 private:
  uint64_t round_ = 0;
  uint64_t got_ = 0;
};

}  // namespace hcomm::failover
