// A frame arriving in ordered pieces on a message-based link (RdmaLink's receive slots,
// ConnectionLink's messages): where its payload goes, decided when it starts — the posted
// receive's buffer, its on_piece(), the unexpected-frame store, or nowhere — each piece delivered
// there, and the frame completed when whole. ShmLink has its own: it can leave a frame in its
// ring until the receive is posted.
//
// Callbacks of the requests and the observer run from begin() and add(): they may post receives
// or fail the link (which calls fail() here) before those return.
#pragma once

#include <cstddef>

#include "transport/frame.hpp"
#include "transport/link.hpp"
#include "transport/payload.hpp"
#include "transport/posted_receives.hpp"
#include "transport/unexpected_frames.hpp"

namespace hcomm::transport {

class FrameAssembler {
 public:
  /// Abort reasons and goodbyes longer than this are dropped.
  static constexpr size_t kMaxControlPayload = 64 * 1024;
  /// What the link must do after begin() or add().
  enum class Outcome {
    more,     ///< nothing: the frame is incomplete, or complete and handled
    goodbye,  ///< the peer closed its communicator (a close frame): end the link gracefully
  };

  FrameAssembler(LinkObserver& observer, PostedReceives& posted, UnexpectedFrames& unexpected,
                 int peer)
      : observer_(observer), posted_(posted), unexpected_(unexpected), peer_(peer) {}

  bool active() const { return cur_.active; }
  /// Payload bytes the frame in progress still lacks.
  size_t missing() const { return cur_.header.length - cur_.got; }
  /// Starts a frame (its magic already checked); a frame without payload completes at once.
  Outcome begin(const FrameHeader& header);
  /// The frame's next `bytes` (at most missing()).
  Outcome add(const std::byte* data, size_t bytes);
  /// The link failed: the receive the frame in progress was going to, if any, gets `status`.
  void fail(const Status& status);

 private:
  enum class Target { direct, pieces, stash, control, discard };
  struct Incoming {
    bool active = false;
    FrameHeader header;
    size_t got = 0;
    Target target = Target::discard;
    RecvRequest* request = nullptr;
    std::byte* dst = nullptr;
    Payload payload;  // stash and control
  };
  Outcome finish();

  LinkObserver& observer_;
  PostedReceives& posted_;
  UnexpectedFrames& unexpected_;
  const int peer_;
  Incoming cur_;
};

}  // namespace hcomm::transport
