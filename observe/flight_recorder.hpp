// The flight recorder of one communicator: its last N operations (HCOMM_TRACE_BUFFER_SIZE) in a
// ring, each with its call, its enqueued/started/completed times and how it ended.
//
// Threads: record() runs on the submitting thread (under the communicator's submit lock, so one
// at a time), scan() and snapshot() on any other; a mutex guards the ring (held for one record
// write or one pass over the unfinished records). Records of operations still running hold their
// Completion until a scan or snapshot finalizes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "observe/op_record.hpp"

namespace hcomm::observe {

class FlightRecorder {
 public:
  /// `capacity` 0: records nothing.
  explicit FlightRecorder(size_t capacity) : ring_(capacity) {}
  size_t capacity() const { return ring_.size(); }

  /// Keeps `record`, overwriting the oldest once the ring is full.
  void record(OpRecord record);

  /// What runs now, after finalizing every record whose operation ended.
  struct Scan {
    size_t in_flight = 0;
    std::optional<OpRecord> oldest;  ///< the longest-running operation (completion dropped)
    std::optional<OpRecord> newest_collective;  ///< the last collective recorded
    uint64_t failures = 0;                      ///< operations failed so far (not aborted)
    std::optional<OpRecord> first_failure;      ///< the first of them
  };
  Scan scan();

  /// Every record, oldest first, finalized where possible (completions dropped in the copies).
  std::vector<OpRecord> snapshot();
  /// Operations recorded since creation (snapshot() holds the last capacity() of them).
  uint64_t recorded() const;

 private:
  /// Finalizes records from first_open_ on (at most `at_most` of them); under mutex_.
  void finalize_locked(uint64_t at_most = UINT64_MAX);
  static constexpr uint64_t kFinalizeOnRecord = 4;
  /// A copy of `r` (its times converted) without its completion.
  static OpRecord detached(OpRecord& r);

  mutable std::mutex mutex_;
  std::vector<OpRecord> ring_;
  uint64_t next_ = 0;        // records written; record k is at ring_[k % capacity]
  uint64_t first_open_ = 0;  // no record before this one is unfinished
  uint64_t failures_ = 0;
  std::optional<OpRecord> first_failure_;
  uint64_t newest_collective_ = 0;  // 1 + the index of the last collective; 0: none
};

}  // namespace hcomm::observe
