// The slot board of a communicator whose ranks all share one host: per rank, a few slots that
// every other rank reads directly. Small collectives run on it from the calling thread
// (collectives/slot_collectives.hpp) — a store, a few loads and a reduction — instead of frames
// through links and the progress engine.
//
// "/dev/shm/hcomm-seg-<uid>-board": rank 0 creates it, the others map it and the last one to do
// so removes the name. It begins with a LinkSegmentHeader, so the same reaper removes the board
// of a crashed run.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "hcomm/status.hpp"
#include "transport/shm/link_segment.hpp"

namespace hcomm::transport::shm {

/// What a rank put in one slot for operation `seq`. `seq` is written last (release): a reader
/// that sees its operation's number sees everything else too.
struct alignas(64) SlotHeader {
  std::atomic<uint32_t> seq{0};      ///< low 32 bits of the slot operation number; futex word
  std::atomic<uint32_t> waiters{0};  ///< readers asleep on `seq` (writer wakes them)
  uint8_t op_kind = 0;
  uint8_t dtype = 0;
  uint8_t redop = 0;
  uint8_t rejected = 0;  ///< the writer's arguments were invalid; data holds the reason
  int32_t root = -1;
  uint64_t op_seq = 0;  ///< the writer's collective number (Operation::seq): mismatch detection
  uint64_t bytes = 0;   ///< the writer's operation size (mismatch detection)
  uint64_t data_bytes = 0;
};

/// Per rank: the last slot operation it finished (its slots' readers are done with older ones).
struct alignas(64) SlotProgress {
  std::atomic<uint32_t> done{0};
  std::atomic<uint32_t> waiters{0};
  std::atomic<uint32_t> closed{0};  ///< the rank destroyed its communicator: wait for it no more
};

class SlotBoard {
 public:
  static constexpr uint32_t kDepth = 4;  ///< slots per rank: operations a rank may run ahead
  static constexpr size_t kSlotBytes = 16 * 1024;
  static constexpr int kMaxRanks = 256;  ///< larger one-host communicators go without a board

  /// Collective over the communicator's ranks (all on this host): rank 0 creates, the others
  /// attach until `deadline`.
  static Expected<SlotBoard> establish(uint64_t comm_uid, int rank, int size,
                                       std::chrono::steady_clock::time_point deadline);

  SlotBoard() = default;
  SlotBoard(SlotBoard&&) noexcept = default;
  SlotBoard& operator=(SlotBoard&&) noexcept = default;

  int size() const { return size_; }
  SlotHeader& slot(int rank, uint64_t seq) const;
  std::byte* slot_data(int rank, uint64_t seq) const;
  SlotProgress& progress(int rank) const;
  /// The process behind `rank` (for liveness checks while waiting on it).
  ProcessIdentity process(int rank) const;

 private:
  SharedSegment mem_;
  int size_ = 0;
};

}  // namespace hcomm::transport::shm
