// The shared segment of one pair of ranks on one host: two one-way rings of cells.
//
// The lower rank creates "/dev/shm/hcomm-seg-<comm uid>-<lo>-<hi>"; the higher rank maps it,
// records itself and removes the name at once, so a segment outlives its processes only when one
// of them dies between the two steps. The header names both processes (pid and start time):
// reap_dead_segments() removes a segment whose processes are all gone (the next run does it
// before it creates its own).
//
// A ring carries frames as they travel on every link (transport/frame.hpp): a frame occupies one
// or more consecutive cells; the first cell's header slot holds its FrameHeader and each cell
// holds up to kCellBytes of payload. The producer publishes cells by advancing `tail`, the
// consumer frees them by advancing `head` (both only grow); pipelining falls out of the cell
// granularity. Sleeping: a side about to block sets `consumer_sleeping` / `producer_waiting` in
// the ring it waits on, and whoever changes that ring rings its doorbell.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "hcomm/status.hpp"
#include "transport/frame.hpp"
#include "transport/shm/shared_segment.hpp"

namespace hcomm::transport::shm {

/// One cache line per writer: the consumer's idle look reads the producer's line only.
struct alignas(64) RingControl {
  alignas(64) std::atomic<uint64_t> tail{0};  ///< cells published (producer writes)
  std::atomic<uint32_t> closed{0};  ///< the producer closed its communicator: no more frames
  alignas(64) std::atomic<uint64_t> head{0};  ///< cells consumed (consumer writes)
  alignas(64) std::atomic<uint32_t> consumer_sleeping{0};
  alignas(64) std::atomic<uint32_t> producer_waiting{0};
};

struct LinkSegmentHeader {
  static constexpr uint64_t kMagic = 0x314b4e4c4d434848ull;  // "HHCMLNK1"
  uint64_t magic = 0;
  uint64_t comm_uid = 0;
  uint32_t cells = 0;
  uint32_t cell_bytes = 0;
  ProcessIdentity creator;         ///< the lower rank
  ProcessIdentity attacher;        ///< the higher rank, once it mapped the segment
  std::atomic<uint32_t> state{0};  ///< kCreating, kReady, kAttached
  static constexpr uint32_t kCreating = 0, kReady = 1, kAttached = 2;
};

/// A mapped pair segment and its two rings; ring 0 carries lo -> hi, ring 1 hi -> lo.
class LinkSegment {
 public:
  static constexpr uint32_t kCells = 64;
  static constexpr size_t kCellBytes = 32 * 1024;

  /// "hcomm-seg-<uid>-<lo>-<hi>".
  static std::string name_for(uint64_t comm_uid, int lo, int hi);
  /// Lower rank: creates and initialises the segment (a stale one of a dead run is replaced).
  static Expected<LinkSegment> create(const std::string& name, uint64_t comm_uid);
  /// Higher rank: maps it once the creator marked it ready, records itself, removes the name.
  /// HCOMM_ERR_INVALID_ARG with `not_yet` set while it does not exist or is not ready.
  static Expected<LinkSegment> attach(const std::string& name, uint64_t comm_uid, bool* not_yet);

  LinkSegment() = default;
  LinkSegment(LinkSegment&&) noexcept = default;
  LinkSegment& operator=(LinkSegment&&) noexcept = default;

  LinkSegmentHeader& header() const { return *static_cast<LinkSegmentHeader*>(mem_.data()); }
  RingControl& control(int ring) const;
  /// Header slot of cell `seq % kCells`.
  FrameHeader& cell_header(int ring, uint64_t seq) const;
  /// Payload bytes of cell `seq % kCells`.
  std::byte* cell_data(int ring, uint64_t seq) const;

 private:
  explicit LinkSegment(SharedSegment mem) : mem_(std::move(mem)) {}
  /// Where ring `ring` (its control block, then its cells) starts.
  std::byte* ring_base(int ring) const;
  SharedSegment mem_;
};

/// Removes /dev/shm/hcomm-seg-* segments (pair links and slot boards alike: both begin with a
/// LinkSegmentHeader) whose processes have all exited; returns how many.
int reap_dead_segments();

}  // namespace hcomm::transport::shm
