// Runs the schedules of one communicator over its links, on the progress engine's thread.
//
// A step starts when the steps it waits for have completed; sends and receives are handed to the
// peer's Link, local steps (copy, average) run at once. An operation completes when all its steps
// did, or fails on the first error: then its unmatched receives are withdrawn, the frames already
// handed to a link are allowed to finish (they read the user's buffers), and only then is the
// caller's Work completed. Failures detected here (a size mismatch, bad arguments) are sent to
// the other ranks as abort frames, so that their matching operation fails instead of waiting.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectives/frame_codec.hpp"
#include "collectives/operation.hpp"
#include "collectives/schedule.hpp"
#include "transport/link.hpp"

namespace hcomm::collectives {

/// One send or receive step as it ran (HCOMM_PROFILE=2's transfers). The sender's and the
/// receiver's report of a frame carry the same (seq, step, chunk).
struct TransferEvent {
  uint64_t seq = 0;
  OpKind kind = OpKind::barrier;
  bool send = true;
  int peer = -1;
  uint32_t step = 0;
  uint32_t chunk = 0;
  uint64_t bytes = 0;
  std::chrono::steady_clock::time_point start, end;
};

class ScheduleExecutor final : public transport::LinkObserver {
 public:
  ScheduleExecutor(uint32_t comm_id, int rank, int size);
  ~ScheduleExecutor();

  /// The link to `peer` (not owned). Set before operations that involve the peer start.
  void set_link(int peer, transport::Link* link);
  /// Kept up to date with the number of running operations (not owned; may be null).
  void set_activity_counter(std::atomic<int>* counter) { activity_ = counter; }
  /// Compresses frames as each operation's Operation::compression asks (set before operations
  /// start; without it nothing is compressed, but what arrives compressed is still decoded).
  void set_compression_policy(std::shared_ptr<CompressionPolicy> policy) {
    codec_ = FrameCodec(std::move(policy));
  }
  /// Starts `op` with its schedule.
  void start(OperationPtr op, Schedule schedule);
  /// Fails every running operation with `status` (communicator destruction).
  void fail_all(const Status& status);
  /// Communicator::abort(): fails every running and later operation with `status`.
  void abort_all(const Status& status);
  /// The op_seq of an abort frame that aborts the whole communicator.
  static constexpr uint64_t kAbortAll = UINT64_MAX;
  size_t running() const { return runs_.size(); }

  /// Point-to-point messages whose first frame arrived while no running receive waited for
  /// them: (peer, op_seq) -> arrival number (increasing). A message leaves once a receive for it
  /// starts. What receives from any source choose from (the API layer's matching).
  using UnexpectedMessages = std::map<std::pair<int, uint64_t>, uint64_t>;
  const UnexpectedMessages& unexpected_messages() const { return unexpected_; }
  /// Runs after a message joined unexpected_messages() (from should_drop(): it may start
  /// operations, which start later, in the engine's task order).
  void set_on_unexpected_message(std::function<void()> cb) { on_unexpected_ = std::move(cb); }
  /// Hears of every send and receive step that completed (on the engine thread); none: nothing
  /// is timed.
  void set_transfer_observer(std::function<void(const TransferEvent&)> observer) {
    transfer_observer_ = std::move(observer);
  }

  // transport::LinkObserver
  void on_remote_abort(int peer, uint32_t comm_id, uint64_t op_seq,
                       const std::string& reason) override;
  bool should_drop(const transport::FrameHeader& header) override;
  void on_link_failed(int peer, const Status& status, bool graceful) override;

 private:
  struct Run;
  struct SendIo;
  struct RecvIo;

  void drain();
  void execute(Run& run, uint32_t step);
  void step_done(Run& run, uint32_t step);
  void io_done(Run& run, uint32_t step, const Status& status, bool tell_peers);
  void fail(Run& run, const Status& status, bool tell_peers);
  void maybe_finish(Run& run);
  void tell_peers(const Run& run, const std::string& reason);
  bool involves(const Run& run, int peer) const;
  /// A lost peer `run` involves (-1: none).
  int first_lost(const Run& run) const;
  void fail_running(const Status& status);

  const uint32_t comm_id_;
  const int rank_;
  const int size_;
  std::vector<transport::Link*> links_;
  Run* find(int peer, uint64_t op_seq);

  std::unordered_map<uint64_t, std::unique_ptr<Run>> runs_;  // by local run id
  uint64_t next_run_id_ = 1;
  // Aborted operations: collectives by seq; point-to-point by (peer, seq), since their keys
  // repeat across pairs.
  std::unordered_map<uint64_t, std::string> aborted_;
  std::map<std::pair<int, uint64_t>, std::string> aborted_p2p_;
  std::map<int, Status> lost_;  // peers lost for good, and why
  Status abort_all_;            // set once the communicator is aborted
  std::deque<std::pair<Run*, uint32_t>> ready_;
  std::vector<std::unique_ptr<Run>> finished_;  // freed once no callback is on the stack
  int depth_ = 0;
  std::atomic<int>* activity_ = nullptr;
  UnexpectedMessages unexpected_;
  uint64_t arrivals_ = 0;
  std::function<void()> on_unexpected_;
  std::function<void(const TransferEvent&)> transfer_observer_;
  FrameCodec codec_{std::make_shared<CompressionPolicy>(std::vector<bool>(), 0, false)};
  std::vector<uint64_t> aligned_piece_;  // a misaligned received piece, copied (RecvIo::on_piece)
};

}  // namespace hcomm::collectives
