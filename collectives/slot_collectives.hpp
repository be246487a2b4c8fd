// Small collectives of a one-host communicator, run over the SlotBoard instead of links.
//
// Each rank copies its contribution into its own slot and publishes the operation number; every
// rank that needs it reads the others' slots straight from shared memory and computes its result
// (reductions in rank order 0, 1, ..., so every rank gets bit-identical sums). No frame, no link,
// no engine hand-off: an 8-byte allreduce on two ranks is a store, a load of the peer's cache
// line and an add, done in the calling thread when the peers are already there.
//
// Operations are started in call order (publishing as soon as the slot is free: a rank may run
// kDepth operations ahead of the slowest reader) and complete in that order. Whoever gets there
// first moves them on: the submitting thread, a thread waiting on one (this class is its
// ProgressDriver: it polls, then sleeps on the futex of the slot it waits for, which the writer
// wakes), or the progress engine (a Poller, for operations nobody waits on yet).
//
// Which operations: allreduce, reduce, broadcast, allgather and barrier, up to
// SlotBoard::kSlotBytes per rank, and larger allreduces through the board's staging areas
// (StagedAllreduce: once every rank's slot header matched, the front operation's exchange moves
// on like the slots do) — a choice that depends only on the call, so ranks agree.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "collectives/operation.hpp"
#include "collectives/staged_allreduce.hpp"
#include "core/completion.hpp"
#include "hcomm/status.hpp"
#include "transport/progress_engine.hpp"
#include "transport/shm/slot_board.hpp"

namespace hcomm::collectives {

class SlotCollectives final : public core::ProgressDriver, public transport::Poller {
 public:
  using Clock = std::chrono::steady_clock;

  /// `spin`: how long a waiting thread busy polls before it sleeps on a futex.
  SlotCollectives(transport::shm::SlotBoard board, int rank, std::chrono::microseconds spin);
  /// Fails what is still pending (HCOMM_ERR_ABORTED). Remove the poller from the engine first.
  ~SlotCollectives() override;

  /// Whether `op` runs here (the same answer on every rank for the same call).
  bool handles(const Operation& op) const;
  /// Whether `op` runs here through the staging areas (StagedAllreduce).
  bool stages(const Operation& op) const { return StagedAllreduce::handles(board_, op); }
  using Finished = std::vector<std::pair<OperationPtr, Status>>;

  /// Starts `op`, numbered after every earlier call. Operations it finished on the way (it may
  /// be one of them) go to `finished`: the caller completes them with complete() once it holds
  /// no lock, since a completion callback may start the next operation.
  void start(OperationPtr op, std::chrono::milliseconds timeout, Finished* finished);
  static void complete(Finished& finished);
  /// Communicator::abort(): tells every rank through the board, and fails what is pending here
  /// (HCOMM_ERR_ABORTED). From then on every rank's slot operations fail, saying who aborted
  /// and why. Any thread; never blocks on a peer.
  void abort(const std::string& reason);
  /// HCOMM_ERR_ABORTED, saying who and why, once some rank aborted (SlotBoard::abort_notice).
  Status abort_status() const;

  // core::ProgressDriver: progresses until `c` is done or `deadline`.
  void drive(const core::Completion& c, Clock::time_point deadline) override;
  // transport::Poller (engine thread): operations nobody waits on.
  bool poll() override;
  bool prepare_sleep() override { return true; }
  /// Operations nobody waits on are looked at every millisecond (their peers ring no doorbell;
  /// busy polling for them could burn a core for as long as a peer is late).
  int max_sleep_ms() const override { return pending_count_.load() > 0 ? 1 : -1; }

 private:
  struct Pending {
    OperationPtr op;
    uint64_t seq = 0;  // slot operation number (the board's 32-bit words hold its low bits)
    std::chrono::milliseconds timeout{0};
    Clock::time_point deadline{};  // set by the first check_stuck()
    bool published = false;
    bool staging = false;  // every header matched: its StagedAllreduce exchange is under way
    Status status;         // a failure found before publishing (rejected arguments, timeout)
  };
  /// What the front operation waits for, to sleep on.
  using Blocker = transport::shm::BoardWait;

  /// Publishes and completes what it can, in order; true when it did anything. Under mutex_;
  /// the caller completes `finished` after unlocking.
  bool progress(Blocker* blocker, Finished* finished);
  bool try_publish(Pending& p, Blocker* blocker);
  /// Finishes the front operation if every part it reads is there (or it failed).
  bool try_complete(Pending& p, Blocker* blocker, Finished* finished);
  Status check_peer(int q, uint64_t seq, const Operation& op) const;
  void compute(const Operation& op, uint64_t seq) const;
  /// A peer process that is gone, or an expired deadline, fails the front operation.
  Status check_stuck(Pending& p, const Blocker& b);

  transport::shm::SlotBoard board_;
  const int rank_;
  StagedAllreduce staged_;     // the front operation's, when it is a staged one
  bool staged_moved_ = false;  // it used up its moves of one look: look again at once
  const std::chrono::microseconds spin_;
  std::mutex mutex_;
  std::deque<Pending> pending_;
  std::atomic<int> pending_count_{0};
  std::atomic<int> drivers_{0};  // threads in drive(): poll() leaves the operations to them
  uint64_t next_ = 0;
  std::vector<uint32_t> done_seen_;  // per rank, its SlotProgress::done as last read
  Clock::time_point next_liveness_{};
  unsigned stuck_checks_ = 0;
  /// How long the engine thread keeps polling after an operation moved (see poll()).
  static constexpr std::chrono::microseconds kHotAfterMove{200};
  Clock::time_point last_move_{};  // engine thread: when poll() last moved something
};

}  // namespace hcomm::collectives
