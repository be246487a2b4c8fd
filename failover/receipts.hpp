// The receiving side's acknowledgements: which frames of the peer arrived whole (delivered to
// their receive, or stored until it is posted), and when the peer must be told. The peer keeps
// every frame until it hears, so an acknowledgement is owed for every arrival, and again for
// every duplicate (a frame sent twice means the peer lacks the acknowledgement).
//
// When: a frame the sender keeps in place (kFrameAckNow) is acknowledged at once; others lazily
// (with the next heartbeat tick), unless kLazyAcks are owed, or a duplicate came: then after
// the current round. The owner sends; this class only counts. Engine thread only.
#pragma once

#include <cstdint>

#include "failover/channel_message.hpp"
#include "failover/delivery_window.hpp"
#include "transport/frame.hpp"

namespace hcomm::failover {

class Receipts {
 public:
  /// Arrivals acknowledged lazily at most; then after the current round.
  static constexpr uint32_t kLazyAcks = 64;

  /// When the owner should send ack().
  enum class Due { later, soon, now };

  /// Frame `seq` (numbered by the peer; 0: none) is already delivered.
  bool has(uint64_t seq) const { return seq != 0 && window_.delivered(seq); }
  /// Frame `seq` with `flags` arrived whole. A frame counted already (or numbered 0) changes
  /// nothing and is `later`.
  Due arrived(uint64_t seq, uint8_t flags) {
    if (seq == 0 || window_.delivered(seq)) return Due::later;
    window_.mark(seq);
    ++owed_;
    if ((flags & transport::kFrameAckNow) != 0) return Due::now;
    return owed_ >= kLazyAcks ? Due::soon : Due::later;
  }
  /// A frame that has() arrived again.
  Due duplicate() {
    ++owed_;
    return Due::soon;
  }
  /// Arrivals or duplicates not acknowledged since the last ack().
  bool owed() const { return owed_ > 0; }
  uint64_t cumulative() const { return window_.cumulative(); }
  /// The acknowledgement of everything arrived (the owner sends it); nothing is owed after.
  ChannelMessage ack() {
    ChannelMessage m;
    m.kind = ChannelMessage::Kind::ack;
    m.cumulative = window_.cumulative();
    for (const auto& [first, last] : window_.ranges(kMaxAckRanges))
      m.ranges.push_back({first, last});
    owed_ = 0;
    return m;
  }

 private:
  DeliveryWindow window_;
  uint32_t owed_ = 0;
};

}  // namespace hcomm::failover
