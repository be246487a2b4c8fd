// Where the frames a link receives go: the one router every medium uses.
//
// A link has one FrameRouter and one IncomingFrame per ordered input (a ring, a TCP connection, a
// sequence of messages). When a frame's header arrives on an input, the router decides where its
// payload goes, in this order:
//   - control frames (abort, close, channel) into a buffer of their own, dispatched when whole:
//     aborts and channel frames to the LinkObserver, a close (the peer's goodbye) back to the
//     medium as Event::goodbye;
//   - a data frame the observer says to drop (its operation was aborted, or the reliable channel
//     delivered it already) nowhere;
//   - into the receive posted for it (its buffer, or its on_piece() when it takes pieces);
//   - a frame nobody waits for yet: held in the medium when the medium's HoldPolicy says so (its
//     payload stays in the ring or socket; the receive, usually posted microseconds later, then
//     gets it in place), else copied aside into the unexpected-frame store, from which the next
//     matching post delivers it.
//
// Threads: the link's (its progress engine's) only. Callbacks of requests and of the observer
// run from IncomingFrame::begin(), add() and wrote(), and may post receives, post sends or fail
// the link (which calls FrameRouter::fail()) before those return: the router tolerates that.
#pragma once

#include <chrono>
#include <cstddef>
#include <utility>
#include <vector>

#include "hcomm/status.hpp"
#include "transport/frame.hpp"
#include "transport/link.hpp"
#include "transport/payload.hpp"
#include "transport/posted_receives.hpp"
#include "transport/unexpected_frames.hpp"

namespace hcomm::transport {

/// When a frame that arrives before its receive waits in the medium instead of being copied
/// aside. A medium that cannot leave bytes where they are (a message it must give back) holds
/// nothing: the default.
struct HoldPolicy {
  using Clock = std::chrono::steady_clock;
  /// Data frames of at least this many payload bytes are held...
  size_t min_bytes = SIZE_MAX;
  /// ...for at most this long; then they are copied aside and the medium reads on.
  std::chrono::microseconds max_wait{0};

  bool holds(size_t payload_bytes) const {
    return max_wait.count() > 0 && payload_bytes >= min_bytes;
  }
};

class IncomingFrame;

class FrameRouter {
 public:
  /// Control payloads (abort reasons, channel messages) longer than this are dropped.
  static constexpr size_t kMaxControlPayload = 64 * 1024;

  /// `observer` outlives the router.
  FrameRouter(LinkObserver& observer, int peer) : observer_(observer), peer_(peer) {}
  FrameRouter(const FrameRouter&) = delete;
  FrameRouter& operator=(const FrameRouter&) = delete;

  // ---- the receives of the link (Link::post_recv and friends)
  /// Hands a frame stored earlier to `request`; false when none matches.
  bool deliver_stored(RecvRequest* request) { return unexpected_.deliver_stored(request); }
  /// The input whose held frame `request` matches, after giving the frame to it (its payload now
  /// goes there: the medium reads on); nullptr when no input holds it.
  IncomingFrame* claim_held(RecvRequest* request);
  void post(RecvRequest* request) { posted_.post(request); }
  bool cancel(RecvRequest* request) { return posted_.cancel(request); }
  /// The frames stored aside, no longer the router's (failover moves them to another link).
  std::vector<std::pair<FrameHeader, Payload>> take_stored() { return unexpected_.take_all(); }
  /// True while some input holds a frame: the peer's silence is then no sign of a fault.
  bool holding() const;
  /// Payload bytes of data frames the inputs received, and for how long one was arriving on
  /// some input (MediumCounters::bytes_received, receiving_us), up to `now`.
  uint64_t data_bytes() const { return data_bytes_; }
  std::chrono::microseconds receiving(HoldPolicy::Clock::time_point now) const;
  /// The link failed: every posted receive and every frame in progress gets `status`. Stored
  /// frames stay (a receive posted later still gets them).
  void fail(const Status& status);

 private:
  friend class IncomingFrame;

  /// A data frame began or ended arriving on an input (IncomingFrame).
  void data_began(HoldPolicy::Clock::time_point now);
  void data_ended(HoldPolicy::Clock::time_point now);

  LinkObserver& observer_;
  const int peer_;
  PostedReceives posted_;
  UnexpectedFrames unexpected_;
  std::vector<IncomingFrame*> inputs_;
  uint64_t data_bytes_ = 0;
  int arriving_ = 0;  // inputs with a data frame in progress
  HoldPolicy::Clock::time_point arriving_since_{};
  HoldPolicy::Clock::duration arrived_for_{};  // the time some input had one, before that
};

/// One ordered input of a link and the frame arriving on it. The medium feeds it the header, then
/// the payload in order, either writing bytes itself where target() points (zero copy from a
/// socket, a ring's own copy routine) and reporting them with wrote(), or handing them to add().
class IncomingFrame {
 public:
  using Clock = HoldPolicy::Clock;
  /// What the medium must do after begin(), add() or wrote().
  enum class Event {
    none,     ///< nothing: read on (or stop, when held())
    goodbye,  ///< a close frame arrived whole: the peer closed its communicator
  };

  IncomingFrame(FrameRouter& router, HoldPolicy hold);
  ~IncomingFrame();
  IncomingFrame(const IncomingFrame&) = delete;
  IncomingFrame& operator=(const IncomingFrame&) = delete;

  /// A frame is in progress (its header arrived, its payload is not complete).
  bool active() const { return active_; }
  const FrameHeader& header() const { return header_; }
  /// Payload bytes the frame in progress still lacks.
  size_t missing() const { return header_.length - got_; }

  /// A frame's header arrived (its magic and version already checked). A frame without payload
  /// is complete at once.
  Event begin(const FrameHeader& header, Clock::time_point now = Clock::now());
  /// The frame waits in the medium for its receive: read none of its payload until claimed by a
  /// post (FrameRouter::claim_held) or the hold expires.
  bool held() const { return route_ == Route::held; }
  /// For a held frame: when its hold ends.
  Clock::time_point hold_deadline() const { return held_since_ + hold_.max_wait; }
  /// For a held frame whose hold ended by `now`: copied aside from now on (returns true: read on).
  bool release_hold_if_due(Clock::time_point now);
  /// For a held frame: copied aside from now on, whatever the time.
  void release_hold();

  /// Where the next payload bytes go when the medium writes them itself, with room() bytes of
  /// space there (at least min(missing(), kStashGrowBytes)); nullptr: hand them to add() (a
  /// receive that takes pieces, or a dropped frame). Grows a frame being copied aside.
  std::byte* target();
  /// Bytes the medium may write at target() now (0 when it gives nullptr).
  size_t room() const;
  /// The payload goes straight into the posted receive's own buffer.
  bool into_receive_buffer() const { return route_ == Route::direct; }
  /// For payload handed to add(): every piece but the frame's last must be a multiple of this.
  size_t granularity() const;
  /// The frame's next `bytes` (at most missing()), copied to target() or handed to the receive.
  Event add(const std::byte* data, size_t bytes);
  /// The medium wrote the frame's next `bytes` at target() itself.
  Event wrote(size_t bytes);
  /// The link failed: the receive the frame in progress was going to, if any, gets `status`.
  void fail(const Status& status);

 private:
  friend class FrameRouter;
  enum class Route { direct, pieces, held, stash, control, discard };

  /// A frame copied aside gets this much space at first and grows with the bytes that arrive
  /// (by doubling, at least kStashGrowBytes at a time): a header alone, whatever length it
  /// claims, costs at most kStashFirstBytes.
  static constexpr size_t kStashFirstBytes = 16u << 20;
  static constexpr size_t kStashGrowBytes = 1u << 20;

  /// Hands the frame to `request`: direct, pieces, or (rejected by accept()) discard.
  void take(RecvRequest* request);
  /// The frame is whole: completes its receive, stores it, or dispatches it.
  Event finish();
  /// Routes the frame into the unexpected-frame store.
  void start_stash();
  /// For a frame copied aside: space for its next `bytes` (at most missing()).
  void reserve_stash(size_t bytes);

  FrameRouter& router_;
  const HoldPolicy hold_;
  bool active_ = false;
  FrameHeader header_;
  size_t got_ = 0;
  Route route_ = Route::discard;
  RecvRequest* request_ = nullptr;
  bool data_ = false;         // a data frame: its bytes and time are counted (FrameRouter)
  std::byte* dst_ = nullptr;  // direct: the receive's buffer; stash, control: payload_
  Payload payload_;
  Clock::time_point held_since_{};
};

}  // namespace hcomm::transport
