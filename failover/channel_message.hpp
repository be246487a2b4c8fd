// The reliable channel's own messages: what a ReliableLink tells the ReliableLink of its peer in
// FrameKind::channel frames (heartbeats, acknowledgements, switch notices, reconnection
// requests and replies, admissions to the multi-path split), and how they are written into a
// frame and read back out of one.
//
// On the wire a message is a frame header and a payload of at most transport::kMaxChannelPayload
// bytes:
// - step: the kind (low 16 bits) and kChannelVersion (high 16 bits);
// - offset: the sender's cumulative acknowledgement (every message acknowledges);
// - chunk: the slot a switch, reconnection or admission is about (0 for the others);
// - op_seq: the reconnection attempt (redial_*), the sender's switch count (switched, from 1),
//   0 for the others;
// - op_bytes: the sender's timestamp (microseconds of its steady clock, never 0);
// - link_seq: the last timestamp the sender received on this link, advanced by how long it held
//   it (0: none yet), so that the receiver's clock minus it is a round trip;
// - redop: the sender's state on this link: bit 0 frames of its wait there (busy), bit 1 its
//   traffic is paced (a QoS class holds it below the link's speed);
// - payload: the acknowledged ranges above the cumulative point (ack: 16 bytes a range, first
//   and last, host byte order like the header), or the sender's offer (redial request and
//   reply); empty for the others.
// encode() and decode() are pure: no state, any thread. decode() accepts exactly what encode()
// writes and rejects anything else with HCOMM_ERR_TRANSPORT (the frame is then ignored).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "failover/link_supervisor.hpp"
#include "hcomm/status.hpp"
#include "transport/frame.hpp"

namespace hcomm::failover {

/// Bumped whenever the layout above changes; a message of another version is rejected.
constexpr uint32_t kChannelVersion = 3;
/// The most ranges one acknowledgement carries (64 x 16 bytes fit a channel payload).
constexpr size_t kMaxAckRanges = 64;

/// Delivered sequence numbers [first, last] (first <= last).
struct AckRange {
  uint64_t first = 0;
  uint64_t last = 0;
  bool operator==(const AckRange& o) const { return first == o.first && last == o.last; }
};

struct ChannelMessage {
  enum class Kind : uint16_t {
    heartbeat = 1,       ///< a sign of life on an idle link
    ack = 2,             ///< `ranges`: delivered frames above the cumulative point
    switched = 3,        ///< the sender moved its traffic to `slot`, its switch `switches`
    redial_request = 4,  ///< make `slot` again, attempt `attempt`; `offer`: the sender's half
    redial_reply = 5,    ///< the answer to a request of attempt `attempt`; `offer`: the replier's
    admit = 6,           ///< `slot` may carry a share of the large frames again (multi-path)
  };
  Kind kind = Kind::heartbeat;
  /// Every frame of the peer up to this one was delivered (DeliveryWindow::cumulative()).
  uint64_t cumulative = 0;
  /// switched, redial_*, admit: kPrimary or kFallback; kNoSlot for the others.
  int slot = kNoSlot;
  /// redial_*: the attempt, numbered by the rank that asks; 0 for the others.
  uint64_t attempt = 0;
  /// switched: how many switches the sender has made, this one included (a notice that arrives
  /// after a later one, on a slower link, is stale); 0 for the others.
  uint64_t switches = 0;
  /// ack: ascending, disjoint, at most kMaxAckRanges.
  std::vector<AckRange> ranges;
  /// redial_*: what the protocol's offer() returned ("" when it needs none).
  std::string offer;
  /// The sender's clock when it sent this, in microseconds (set by the sender; never 0 on the
  /// wire: encode() writes 1 for 0).
  uint64_t stamp_us = 0;
  /// The last stamp_us the sender received on this link plus how long it held it; 0: none.
  uint64_t echo_us = 0;
  /// Frames of the sender's wait on this link (a round trip measured now includes queueing).
  bool busy = false;
  /// The sender's traffic is paced below the link's speed (QoS): slow arrivals are no fault.
  bool paced = false;
};

/// A message as a frame: send with Link::send_channel(header, payload).
struct EncodedChannelMessage {
  transport::FrameHeader header;
  std::string payload;
};

/// `message` as a frame of communicator `comm_id`. `message` must be valid (what decode()
/// accepts): encoding an invalid one is a programming error, checked in debug builds.
EncodedChannelMessage encode(const ChannelMessage& message, uint32_t comm_id);

/// The message of a FrameKind::channel frame, or HCOMM_ERR_TRANSPORT naming what is wrong: not
/// a channel frame, another version, an unknown kind, a field a kind does not use set, a slot
/// out of range, a switch numbered 0, a stamp of 0, a payload of the wrong length, ranges not
/// ascending or with first > last.
Expected<ChannelMessage> decode(const transport::FrameHeader& header, const std::string& payload);

/// "heartbeat", "ack", ...: for logs.
const char* to_string(ChannelMessage::Kind kind);

}  // namespace hcomm::failover
