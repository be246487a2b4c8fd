// The frame: the unit every link carries, whatever the medium.
//
// A frame is a fixed 64-byte header followed by `length` payload bytes. The header names the
// operation and the piece of it (communicator, operation sequence, step, chunk, byte offset), so
// a receiver can place a payload that arrives before its receive is posted, on any of a peer's
// parallel connections, and so the reliable channel (failover/) can replay a frame on another
// link. `link_seq` numbers frames per peer for exactly that replay; the links leave it alone.
// Headers travel in host byte order: hcomm ranks of one job run on one architecture.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace hcomm::transport {

enum class FrameKind : uint8_t {
  data = 1,     ///< payload of a schedule step
  abort = 2,    ///< the sender failed operation `op_seq`; payload: the reason (text)
  close = 3,    ///< the sender is closing the communicator on purpose
  channel = 4,  ///< the reliable channel's own (failover/): heartbeats, acknowledgements, ...
};

/// FrameHeader::flags.
enum FrameFlags : uint8_t {
  /// The sender keeps the payload in place until it is acknowledged: acknowledge at once.
  kFrameAckNow = 1,
  /// Bits 1..3 name the payload's codec (compression::Codec's wire id; 0: the elements as they
  /// are), so a receiver decodes whatever arrives; `length` is then the encoded size.
  kFrameCodecMask = 0x0e,
  /// A probe of the path (failover/link_probe.hpp): bulk bytes that measure a link, dropped by
  /// the receiving reliable channel; never a schedule's data, never numbered (link_seq 0).
  kFrameProbe = 0x10,
};
constexpr int kFrameCodecShift = 1;

struct FrameHeader {
  static constexpr uint16_t kMagic = 0x4348;  // "HC"
  static constexpr uint8_t kVersion = 2;

  uint16_t magic = kMagic;
  uint8_t version = kVersion;
  uint8_t flags = 0;  ///< FrameFlags
  uint8_t kind = static_cast<uint8_t>(FrameKind::data);
  uint8_t op_kind = 0;  ///< which operation (allreduce, ...): mismatch detection
  uint8_t dtype = 0;
  uint8_t redop = 0;
  uint32_t comm_id = 0;
  int32_t src_rank = -1;
  uint64_t op_seq = 0;    ///< per-communicator operation number (p2p ops have their own space)
  uint32_t step = 0;      ///< algorithm step
  uint32_t chunk = 0;     ///< pipelining chunk within the step
  uint64_t offset = 0;    ///< payload's byte offset within the operation's buffer
  uint64_t length = 0;    ///< payload bytes after the header
  uint64_t op_bytes = 0;  ///< the sender's size of the operation: mismatch detection
  uint64_t link_seq = 0;  ///< per-peer frame number of the reliable channel; 0: none
};
static_assert(sizeof(FrameHeader) == 64, "the frame header is 64 bytes on the wire");

/// What a receive is matched on. Frames of one peer with equal keys never coexist.
struct MatchKey {
  uint32_t comm_id = 0;
  uint64_t op_seq = 0;
  uint32_t step = 0;
  uint32_t chunk = 0;

  static MatchKey of(const FrameHeader& h) { return {h.comm_id, h.op_seq, h.step, h.chunk}; }
  bool operator==(const MatchKey& o) const {
    return comm_id == o.comm_id && op_seq == o.op_seq && step == o.step && chunk == o.chunk;
  }
};

struct MatchKeyHash {
  size_t operator()(const MatchKey& k) const {
    uint64_t h = k.op_seq * 0x9e3779b97f4a7c15ull;
    h ^= (static_cast<uint64_t>(k.step) << 32 | k.chunk) + 0x7f4a7c159e3779b9ull + (h << 6);
    h ^= k.comm_id + (h >> 2);
    return static_cast<size_t>(h);
  }
};

}  // namespace hcomm::transport
