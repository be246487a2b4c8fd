// The sending side of the reliable channel: every data frame sent to the peer, numbered and kept
// until the peer acknowledges it, so that a switch to the other link can send it again.
//
// A small data frame is kept as a copy (its sender's request can complete at once, as an eager
// send does, and the copy is what gets replayed); a large one, or one past the copies' budget, is
// kept in place: the request's payload must stay unchanged until the frame is acknowledged, and
// the frame asks the receiver to acknowledge at once (kFrameAckNow).
//
// The buffer only keeps frames: it calls no request back. Whoever removes a frame completes the
// request it returns. Engine thread only, like the ReliableLink that owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "failover/channel_message.hpp"
#include "failover/link_health.hpp"
#include "transport/frame.hpp"
#include "transport/link.hpp"

namespace hcomm::failover {

class ReplayBuffer {
 public:
  /// Data frames up to this size are copied. Not more: a sender that runs ahead makes larger
  /// frames arrive before their receive is posted, and the receiver's extra copy out of its
  /// unexpected store then costs more than waiting for the acknowledgement.
  static constexpr size_t kStageMaxBytes = 16 * 1024;
  /// ... as long as the copies held stay under this.
  static constexpr size_t kStageBudget = size_t{16} << 20;
  /// Copy buffers of removed frames kept for the next copies (page faults of fresh ones).
  static constexpr size_t kSpareBuffers = 32;

  /// A frame sent and not yet acknowledged.
  struct Frame {
    /// The request that sent it; null once completed (or forgotten).
    transport::SendRequest* user = nullptr;
    transport::FrameHeader header;  ///< link_seq: its number
    /// The bytes to send: the copy, or the request's payload in place.
    const void* payload = nullptr;
    const void* buffer = nullptr;  ///< the request's buffer (in place only)
    size_t buffer_bytes = 0;
    std::vector<std::byte> staged;  ///< the copy
    bool copied = false;            ///< kept as a copy (`staged`)
    bool in_flight = false;         ///< a link holds a send of it that has not completed
    bool acked = false;
    bool sent_once = false;  ///< handed to a link at least once (a later send is a replay)
    /// The link its last send went on (slot and that slot's epoch; -1: none yet): while that
    /// link is up it delivers the frame, which is not sent again on another.
    int last_slot = -1;
    uint64_t last_epoch = 0;
    /// The slot whose link health counts it as waiting (in-place frames only; -1: none), and
    /// what that link's health noted when it was sent there.
    int counted_slot = -1;
    DeliveryStamp stamp;
  };

  /// Numbers `request`'s frame (header.link_seq, from 1 up) and keeps it, as a copy or in place
  /// (see above). The request is not called back; the frame is valid until remove() or clear().
  Frame& add(transport::SendRequest* request);
  /// Frame `seq`, or null when it is not kept (acknowledged and removed, or never sent).
  Frame* find(uint64_t seq);
  /// Marks acknowledged the frames that `cumulative` (every number up to it) and `ranges`
  /// cover and were not acknowledged before, and returns their numbers, ascending. Numbers not
  /// kept are ignored; the frames stay kept (remove() them once no link holds them).
  std::vector<uint64_t> acknowledge(uint64_t cumulative, const std::vector<AckRange>& ranges);
  /// Drops frame `seq` (its copy's buffer is kept for a later copy) and returns its request if
  /// that was not completed yet: the caller completes it. Null when none or not kept.
  transport::SendRequest* remove(uint64_t seq);
  /// The numbers of the frames no link holds, ascending: the acknowledged ones in `done` (to be
  /// removed), the others in `again` (to be sent again).
  void idle(std::vector<uint64_t>& done, std::vector<uint64_t>& again) const;
  /// The requests not completed yet, ascending by frame; the frames stay kept without them.
  std::vector<transport::SendRequest*> take_requests();
  /// Drops every frame (their requests are not called back).
  void clear();

  /// Calls `f(frame)` for every frame kept, ascending (`f` must not add or remove frames).
  template <typename F>
  void for_each(F&& f) {
    for (auto& [seq, frame] : frames_) f(*frame);
  }

  size_t size() const { return frames_.size(); }
  /// The bytes held as copies.
  size_t copied_bytes() const { return copied_bytes_; }
  uint64_t next_seq() const { return next_seq_; }

 private:
  void recycle(Frame& frame);

  uint64_t next_seq_ = 1;
  std::map<uint64_t, std::unique_ptr<Frame>> frames_;
  size_t copied_bytes_ = 0;
  std::vector<std::vector<std::byte>> spare_;
};

}  // namespace hcomm::failover
