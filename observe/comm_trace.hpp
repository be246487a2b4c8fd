// What observe/ keeps of one communicator: its flight recorder, its slot in the stats segment, its
// progress board, and what the observer thread decided about it so far (stalls reported, dumps
// requested). Made by Observer::attach(), which also gives it to the observer thread.
//
// Threads: record() on the submitting thread (one at a time: the communicator's submit lock);
// tick() on the observer thread; gather() on any thread. The communicator's control is used only
// while attached (detach() waits for a tick that uses it to finish).
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/communicator_control.hpp"
#include "collectives/schedule_executor.hpp"
#include "observe/flight_recorder.hpp"
#include "observe/progress_board.hpp"
#include "observe/settings.hpp"
#include "observe/stats_segment.hpp"
#include "observe/time_base.hpp"
#include "observe/trace_files.hpp"

namespace hcomm::observe {

struct CommIdentity {
  std::string id;  ///< the communicator's uid, 16 hex digits: alike on every rank
  int rank = 0;
  int size = 1;
  std::string root_addr;  ///< its rendezvous store
  std::string host;
  int64_t op_timeout_ms = 0;
  std::string launch_error_key;  ///< where a late launching mistake is posted (may be empty)
};

class CommTrace {
 public:
  /// `control`: read for lost peers; aborted only for a launch error (Observer::tick).
  CommTrace(CommIdentity identity, const Settings& settings, actors::CommunicatorControl* control,
            StatsComm* slot);
  const CommIdentity& identity() const { return identity_; }
  StatsComm* stats_slot() const { return slot_; }

  /// The submitting thread, once `record` (make_record() of an operation made before it was
  /// handed off) has been handed off: stamps it now and keeps it. Called after the hand-off, so
  /// that its cost overlaps the operation instead of delaying the peers that wait for it.
  void record(OpRecord record) {
    if (slot_ != nullptr) {  // one writer (the submit lock): no read-modify-write needed
      slot_->ops.store(slot_->ops.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      slot_->bytes.store(slot_->bytes.load(std::memory_order_relaxed) + record.bytes,
                         std::memory_order_relaxed);
    }
    record.enqueued_raw = TimeBase::raw_now();
    recorder_.record(std::move(record));
  }

  /// What happened since the last tick that the observer must act on.
  struct Findings {
    std::string stall_line;    ///< an operation waits too long (log it)
    bool first_stall = false;  ///< ... for the first time: dump, and ask the others to
    std::string dump_reason;   ///< timeout, peer_lost, failed, request: dump for this
    std::string dump_detail;
    std::string launch_error;  ///< a launching mistake posted after creation: abort with it
  };
  /// The engine thread (HCOMM_PROFILE=2): a send or receive step ended.
  void record_transfer(const collectives::TransferEvent& e);

  /// Observer thread, every tick.
  Findings tick(int64_t now_ns);
  /// A failure no tick has reported yet (the communicator is going): its description, or "".
  std::string unreported_failure();
  /// Observer thread: tells the other ranks to dump (after a stall).
  void request_dumps();
  /// Observer thread: a launching mistake was posted after creation (Findings::launch_error):
  /// fails what runs on the data plane now and tells the peers (unless detached); the
  /// communicator aborts itself with it at its next operation (launch_error_found()).
  void abort_for_launch_error(const std::string& reason);
  /// Any thread, cheap: abort_for_launch_error() happened; launch_error() is its reason.
  bool launch_error_found() const { return launch_error_found_.load(std::memory_order_acquire); }
  std::string launch_error() const;

  /// Any thread: this communicator's part of a profile or dump.
  CommTraceData gather();
  /// The communicator is going: no more use of its control.
  void detach();
  int64_t offset_ns() const { return offset_ns_; }

 private:
  void refresh_stats(const FlightRecorder::Scan& scan, int64_t now_ns, bool slow_fields);
  void sample_counters(const FlightRecorder::Scan& scan, int64_t now_ns);
  /// Board I/O; a failure is logged once and leaves the board off.
  bool board_ok(const Status& st);
  void publish_progress(const FlightRecorder::Scan& scan, bool force);
  std::vector<std::pair<std::string, uint64_t>> bytes_by_transport_locked() const;

  CommIdentity identity_;
  Settings settings_;
  FlightRecorder recorder_;
  StatsComm* slot_;
  mutable std::mutex control_mutex_;
  actors::CommunicatorControl* control_;  // under control_mutex_; null once detached
  bool launch_error_seen_ = false;        // observer thread
  std::atomic<bool> launch_error_found_{false};
  std::string launch_error_;  // under control_mutex_

  // The observer thread's, and detach()'s last look (tick_mutex_).
  std::mutex tick_mutex_;
  std::unique_ptr<ProgressBoard> board_;
  int64_t offset_ns_ = 0;
  uint64_t published_seq_ = 0;
  OpState published_state_ = OpState::enqueued;
  int64_t next_publish_ns_ = 0;
  int64_t next_slow_ns_ = 0;
  int64_t next_sample_ns_ = 0;
  int64_t dumps_seen_ = 0;
  int64_t stall_enqueued_ns_ = -1;
  int64_t next_stall_age_ns_ = 0;
  int64_t early_published_ns_ = -1;   // the operation whose state was published half way
  int64_t timeout_enqueued_ns_ = -1;  // the operation a deadline dump was made for
  size_t lost_seen_ = 0;
  uint64_t failed_seen_ = 0;
  std::mutex samples_mutex_;
  std::deque<CounterSample> samples_;     // under samples_mutex_
  std::deque<TransferRecord> transfers_;  // under samples_mutex_
  uint64_t transfers_dropped_ = 0;        // under samples_mutex_
};

}  // namespace hcomm::observe
