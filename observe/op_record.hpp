// observe/: what hcomm tells about its operations while it runs — the flight recorder of recent
// operations, the profile (a Chrome trace), the live counters hcomm-perf-mon reads, and the stall
// report. Nothing here is on a link's path: the only hook on the operation path is
// CommTrace::record(), one ring write per operation.
//
// This file: one recorded operation, and the clock every record uses.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "collectives/operation.hpp"
#include "core/completion.hpp"

namespace hcomm::observe {

/// Nanoseconds of the steady clock (CLOCK_MONOTONIC: shared by the processes of one host).
inline int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// Where an operation is. `started`: handed to the progress engine or the slot board, which an
/// operation is in the call that makes it (so its enqueued and started times are one reading).
enum class OpState : uint8_t { enqueued, started, completed, failed };
const char* op_state_name(OpState s);

/// One operation as the recorder keeps it: its call, its times (steady_ns, this rank's clock) and
/// how it ended. `completion` is held until the observer reads its outcome (finalize()), then
/// dropped, so that a record outlives its operation without keeping anything of it.
struct OpRecord {
  uint64_t seq = 0;
  collectives::OpKind kind = collectives::OpKind::barrier;
  DataType dtype = DataType::uint8;
  ReduceOp redop = ReduceOp::sum;
  collectives::Algorithm algo = collectives::Algorithm::automatic;
  Compression compression = Compression::none;
  int root = -1;
  int peer = -1;
  int tag = -1;
  uint64_t count = 0;         ///< elements (the operation's `count`; the V forms: their total)
  uint64_t bytes = 0;         ///< Operation::agreed_bytes() (alltoallv: this rank's send bytes)
  uint64_t enqueued_raw = 0;  ///< TimeBase::raw_now() when recorded (0: enqueued_ns is set)
  int64_t enqueued_ns = 0;    ///< from enqueued_raw, by stamp_ns()
  int64_t started_ns = 0;
  int64_t completed_ns = 0;  ///< 0 while it runs
  OpState state = OpState::enqueued;
  std::string failure;   ///< the status's text when it failed
  int failure_code = 0;  ///< ... and its code
  std::shared_ptr<core::Completion> completion;

  bool finished() const { return state == OpState::completed || state == OpState::failed; }
  /// Reads the completion's outcome once it is done; true when the record is final.
  bool finalize();
  /// Converts enqueued_raw into enqueued_ns and started_ns (once).
  void stamp_ns();
};

/// `op` as a record (its times are set when it is recorded: CommTrace::record()).
OpRecord make_record(const collectives::Operation& op);

}  // namespace hcomm::observe
