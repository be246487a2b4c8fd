// The slot board of a communicator whose ranks all share one host: per rank, a few slots that
// every other rank reads directly. Small collectives run on it from the calling thread
// (collectives/slot_collectives.hpp) — a store, a few loads and a reduction — instead of frames
// through links and the progress engine. Larger allreduces use its staging areas, one per rank
// with its StageFlags (collectives/staged_allreduce.hpp).
//
// "/dev/shm/hcomm-seg-<uid>-board": rank 0 creates it, the others map it and the last one to do
// so removes the name. It begins with a LinkSegmentHeader, so the same reaper removes the board
// of a crashed run.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "hcomm/status.hpp"
#include "transport/shm/link_segment.hpp"

namespace hcomm::transport::shm {

/// What a rank put in one slot for operation `seq`. `seq` is written last (release): a reader
/// that sees its operation's number sees everything else too. The slot's data follows at once,
/// in the same cache line: a reader of up to 24 bytes takes one line from the writer's core, not
/// two one after the other.
struct SlotHeader {
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

/// Where a rank's staged allreduce stands, published to the others (collectives/
/// staged_allreduce.hpp). Each value is a stage tag: the slot operation number in the high 32
/// bits, steps done in the low ones; compared wrap-safe (stage_reached).
struct alignas(64) StageFlags {
  /// Where in its staging ring its current operation's first step lies (a position that only
  /// grows; written before that operation's first `contributed`).
  alignas(64) std::atomic<uint64_t> base{0};
  std::atomic<uint64_t> contributed{0};           ///< its parts for the others are staged
  alignas(64) std::atomic<uint64_t> reduced{0};   ///< its own part's result is staged
  alignas(64) std::atomic<uint64_t> consumed{0};  ///< it has read the others' results
  /// The last slot operation it gave up in the middle (it then also sets `consumed` past it).
  alignas(64) std::atomic<uint64_t> abandoned{0};
  alignas(64) std::atomic<uint32_t> bell{0};  ///< bumped on every change above; futex word
  std::atomic<uint32_t> waiters{0};           ///< ranks asleep on `bell`
};

/// Stage tag `steps` of slot operation `seq`.
inline uint64_t stage_tag(uint64_t seq, uint64_t steps) {
  return (seq << 32) + steps;
}
/// Whether a published tag is at or past `target` (tags of neighbouring operations only).
inline bool stage_reached(uint64_t value, uint64_t target) {
  return static_cast<int64_t>(value - target) >= 0;
}

/// A board word some rank waits on: its futex word, its sleepers' count, the value seen before
/// the condition was found false, and the rank that will change it (-1: none yet).
struct BoardWait {
  std::atomic<uint32_t>* word = nullptr;
  std::atomic<uint32_t>* waiters = nullptr;
  uint32_t seen = 0;
  int rank = -1;
};

class SlotBoard {
 public:
  static constexpr uint32_t kDepth = 4;  ///< slots per rank: operations a rank may run ahead
  static constexpr size_t kSlotBytes = 16 * 1024;
  static constexpr int kMaxRanks = 256;  ///< larger one-host communicators go without a board
  /// Each rank's staging ring. Steps of one part per rank go one after another through it, so a
  /// line is written again only a ring later, once the reader's core no longer holds it. Parts
  /// are at most kStageBytes / (kStageSteps * size()) bytes (smaller parts cost more hand-overs
  /// between cores; the sizes won the README's alternated sweeps).
  static constexpr size_t kStageBytes = 2 << 20;
  static constexpr uint32_t kStageSteps = 4;
  /// Larger boards have no staging areas: their parts would be small (32 KiB at 16 ranks).
  static constexpr int kMaxStagedRanks = 16;

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
  /// Whether a board of `size` ranks has staging areas.
  static bool staged(int size) { return size > 1 && size <= kMaxStagedRanks; }
  bool staged() const { return staged(size_); }
  /// The largest part: kStageBytes / (kStageSteps * size()), page-rounded down.
  size_t stage_part_bytes() const;
  StageFlags& stage_flags(int rank) const;
  /// Position `position % kStageBytes` of `rank`'s staging ring. @pre staged()
  std::byte* stage_at(int rank, uint64_t position) const;
  /// The process behind `rank` (for liveness checks while waiting on it).
  ProcessIdentity process(int rank) const;

  /// Reasons longer than this are cut.
  static constexpr size_t kAbortReasonBytes = 512;
  /// `rank` aborted the communicator for `reason`: every rank's slot operations fail from now
  /// on (Communicator::abort). Only the first rank's notice stands. Any thread.
  void post_abort(int rank, const std::string& reason) const;
  /// Who aborted the communicator and why; nothing while nobody has. Any thread.
  std::optional<std::pair<int, std::string>> abort_notice() const;

 private:
  /// Every rank's staging ring is used from the first staged allreduce on.
  void prefault_staging() const;
  SharedSegment mem_;
  int size_ = 0;
};

}  // namespace hcomm::transport::shm
