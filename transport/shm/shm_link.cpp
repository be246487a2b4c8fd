#include "transport/shm/shm_link.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "core/log.hpp"
#include "transport/shm/cell_copy.hpp"

namespace hcomm::transport::shm {
namespace {

constexpr uint64_t kCells = LinkSegment::kCells;
constexpr size_t kCellBytes = LinkSegment::kCellBytes;
// Frames this large go into the receive's buffer with streaming stores (cell_copy.hpp): their
// destination does not stay in cache anyway. The README's shared-memory section has the figures.
constexpr size_t kStreamMinBytes = 8 << 20;
constexpr auto kAttachRetry = std::chrono::microseconds(500);

std::string bell_name(uint64_t uid, int from, int to) {
  char buf[80];
  std::snprintf(buf, sizeof(buf), "hcomm-bell-%016" PRIx64 "-%d-%d", uid, from, to);
  return buf;
}

std::string segment_of(uint64_t uid, int a, int b) {
  return LinkSegment::name_for(uid, std::min(a, b), std::max(a, b));
}

}  // namespace

ShmLink::ShmLink(ProgressEngine& engine, LinkObserver& observer, Identity id, uint64_t comm_uid,
                 UpCallback on_up)
    : MediumLink(observer, id,
                 "shm /dev/shm/" + segment_of(comm_uid, id.my_rank, id.peer) + " (rank " +
                     std::to_string(id.peer) + ")",
                 std::move(on_up)),
      engine_(engine),
      comm_uid_(comm_uid),
      segment_name_(segment_of(comm_uid, id.my_rank, id.peer)),
      my_bell_name_(bell_name(comm_uid, id.my_rank, id.peer)),
      peer_bell_name_(bell_name(comm_uid, id.peer, id.my_rank)),
      out_(id.my_rank < id.peer ? 0 : 1),
      in_(id.my_rank < id.peer ? 1 : 0),
      incoming_(router(), kHold) {}

ShmLink::~ShmLink() {
  end_quietly({HCOMM_ERR_ABORTED, "the communicator was destroyed"});
  if (registered_) {
    engine_.remove_poller(this);
    engine_.remove_fd(bell_.fd());
  }
}

LinkCaps ShmLink::caps() const {
  LinkCaps c;
  c.medium = "shm";
  c.max_frame_bytes = SIZE_MAX;
  c.one_sided = false;
  c.detects_peer_failure = true;
  return c;
}

// ---- establishment

void ShmLink::establish(Clock::time_point deadline) {
  auto bell = Doorbell::bind(my_bell_name_);
  if (!bell.ok()) return fail(bell.status());
  bell_ = std::move(bell.value());
  if (identity().my_rank < identity().peer) {
    auto seg = LinkSegment::create(segment_name_, comm_uid_);
    if (!seg.ok()) return fail(seg.status());
    segment_ = std::move(seg.value());
    wait_attached(deadline);
  } else {
    try_attach(deadline);
  }
}

void ShmLink::wait_attached(Clock::time_point deadline) {
  timer_ = 0;
  auto& h = segment_.header();
  if (h.state.load(std::memory_order_acquire) == LinkSegmentHeader::kAttached) {
    peer_process_ = h.attacher;
    return attached();
  }
  if (Clock::now() >= deadline) {
    SharedSegment::unlink(segment_name_);
    return fail({HCOMM_ERR_TIMEOUT, "rank " + std::to_string(identity().peer) +
                                        " never mapped /dev/shm/" + segment_name_ +
                                        " (is it on this host? HCOMM_HOST_ID must differ between "
                                        "hosts that share a boot id)"});
  }
  timer_ =
      engine_.add_timer(Clock::now() + kAttachRetry, [this, deadline] { wait_attached(deadline); });
}

void ShmLink::try_attach(Clock::time_point deadline) {
  timer_ = 0;
  bool not_yet = false;
  auto seg = LinkSegment::attach(segment_name_, comm_uid_, &not_yet);
  if (seg.ok()) {
    segment_ = std::move(seg.value());
    peer_process_ = segment_.header().creator;
    return attached();
  }
  if (!not_yet) return fail(seg.status());
  if (Clock::now() >= deadline)
    return fail({HCOMM_ERR_TIMEOUT, "rank " + std::to_string(identity().peer) +
                                        " never created /dev/shm/" + segment_name_ + ": " +
                                        seg.status().message()});
  timer_ =
      engine_.add_timer(Clock::now() + kAttachRetry, [this, deadline] { try_attach(deadline); });
}

void ShmLink::attached() {
  registered_ = true;
  engine_.add_poller(this);
  engine_.add_fd(bell_.fd(), EPOLLIN, this);
  timer_ = engine_.add_timer(Clock::now() + ProcessIdentity::kCheckPeriod,
                             [this] { check_peer_alive(); });
  went_up();
}

void ShmLink::check_peer_alive() {
  timer_ = 0;
  if (!error().ok()) return;
  // What a peer wrote before it exited (its goodbye included) counts before its death does.
  pump_receives();
  if (!error().ok()) return;
  if (!peer_process_.alive())
    return fail({HCOMM_ERR_PEER_LOST, "rank " + std::to_string(identity().peer) + " (pid " +
                                          std::to_string(peer_process_.pid) +
                                          ", this host) exited without closing its communicator"});
  timer_ = engine_.add_timer(Clock::now() + ProcessIdentity::kCheckPeriod,
                             [this] { check_peer_alive(); });
}

// ---- sending

void ShmLink::send_frame(SendRequest* request) {
  sendq_.push_back(Outgoing{request, 0, false});
  pump_sends();
}

bool ShmLink::pump_sends() {
  if (pumping_ || !is_up()) return false;
  pumping_ = true;
  RingControl& ring = segment_.control(out_);
  bool worked = false;
  while (!sendq_.empty()) {
    if (out_tail_ - out_head_seen_ >= kCells) {
      out_head_seen_ = ring.head.load(std::memory_order_acquire);
      if (out_tail_ - out_head_seen_ >= kCells) break;  // full: the consumer frees cells
    }
    Outgoing& o = sendq_.front();
    const FrameHeader& h = o.request->header;
    if (!o.started) {
      segment_.cell_header(out_, out_tail_) = h;
      o.started = true;
    }
    const size_t n = std::min<size_t>(kCellBytes, h.length - o.written);
    if (n > 0)
      writer_.write(segment_.cell_data(out_, out_tail_),
                    static_cast<const std::byte*>(o.request->payload) + o.written, n,
                    n == kCellBytes);
    o.written += n;
    ring.tail.store(++out_tail_, std::memory_order_release);
    worked = true;
    if (o.written < h.length) continue;
    SendRequest* done = o.request;
    sendq_.pop_front();
    done->on_sent(Status{});  // may post more: the loop picks them up
  }
  pumping_ = false;
  if (worked) wake_peer_if_asked(segment_.control(out_).consumer_sleeping);
  return worked;
}

void ShmLink::wake_peer_if_asked(std::atomic<uint32_t>& asked) {
  // Pairs with the fence in the peer's prepare_sleep(): either it sees what this side just
  // published (cells, freed cells, `closed`), or this side sees its flag.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (asked.load(std::memory_order_relaxed) != 0 && asked.exchange(0) != 0)
    bell_.ring(peer_bell_name_);
}

// ---- receiving

bool ShmLink::pump_receives() {
  if (receiving_ || !is_up()) return false;
  receiving_ = true;
  RingControl& ring = segment_.control(in_);
  bool worked = false;
  while (error().ok()) {
    if (in_head_ == in_tail_seen_) {
      in_tail_seen_ = ring.tail.load(std::memory_order_acquire);
      if (in_head_ == in_tail_seen_) break;
    }
    if (!incoming_.active()) {
      // A frame starts in this cell. One without payload still takes the cell.
      const FrameHeader h = segment_.cell_header(in_, in_head_);
      if (h.magic != FrameHeader::kMagic || h.version != FrameHeader::kVersion) {
        receiving_ = false;
        fail({HCOMM_ERR_INTERNAL, describe() + ": corrupt frame header in the ring"});
        return true;
      }
      const IncomingFrame::Event event = incoming_.begin(h);
      if (!error().ok()) break;  // a receive's callback failed the link
      if (h.length == 0) {
        ring.head.store(++in_head_, std::memory_order_release);
        worked = true;
        handle(event);
        continue;
      }
    }
    // A held frame waits in the ring for its receive (a post claims it; the engine's next poll
    // reads it) until its hold ends.
    if (incoming_.held() && !incoming_.release_hold_if_due(Clock::now())) break;
    const size_t n = std::min<size_t>(kCellBytes, incoming_.missing());
    const std::byte* data = segment_.cell_data(in_, in_head_);
    IncomingFrame::Event event;
    if (std::byte* dst = incoming_.target()) {
      const bool last = n == incoming_.missing();
      if (incoming_.into_receive_buffer() && incoming_.header().length >= kStreamMinBytes) {
        stream_copy(dst, data, n);
        if (last) stream_fence();
      } else {
        cell_copy(dst, data, n);
      }
      event = incoming_.wrote(n);
    } else {
      event = incoming_.add(data, n);  // e.g. reduces straight from the ring
    }
    ring.head.store(++in_head_, std::memory_order_release);
    worked = true;
    handle(event);
  }
  if (worked) wake_peer_if_asked(segment_.control(in_).producer_waiting);
  // A peer that closed sets `closed` after its last cell: seen only once the ring is empty (a
  // frame it cut short fails with the rest).
  if (error().ok() && in_head_ == in_tail_seen_ &&
      ring.closed.load(std::memory_order_acquire) != 0 &&
      ring.tail.load(std::memory_order_acquire) == in_head_)
    peer_closed();
  receiving_ = false;
  return worked;
}

// ---- the engine's side

bool ShmLink::poll() {
  if (asked_for_bell_) {
    asked_for_bell_ = false;
    segment_.control(in_).consumer_sleeping.store(0, std::memory_order_relaxed);
    segment_.control(out_).producer_waiting.store(0, std::memory_order_relaxed);
  }
  bool worked = !sendq_.empty() && pump_sends();
  worked |= pump_receives();
  return worked;
}

bool ShmLink::prepare_sleep() {
  if (!is_up()) return true;
  // A held frame waits for its receive, whose post wakes the engine or comes from a caller
  // driving it: the engine sleeps meanwhile (max_sleep_ms()) rather than spin on the ring, which
  // would take a core from the very thread that is about to post it.
  if (incoming_.held()) return true;
  RingControl& in = segment_.control(in_);
  RingControl& out = segment_.control(out_);
  in.consumer_sleeping.store(1, std::memory_order_relaxed);
  if (!sendq_.empty()) out.producer_waiting.store(1, std::memory_order_relaxed);
  asked_for_bell_ = true;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (in.tail.load(std::memory_order_relaxed) != in_head_ ||
      in.closed.load(std::memory_order_relaxed) != 0)
    return false;
  if (!sendq_.empty() && out_tail_ - out.head.load(std::memory_order_relaxed) < kCells)
    return false;
  return true;
}

int ShmLink::max_sleep_ms() const {
  if (!incoming_.held()) return -1;
  const auto left = incoming_.hold_deadline() - Clock::now();
  return static_cast<int>(
      std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(left).count()));
}

void ShmLink::on_events(int /*fd*/, uint32_t /*events*/) {
  bell_.drain();
  poll();
}

// ---- closing and failing

void ShmLink::say_goodbye() {
  // A frame cut short by this is failed on both sides: here with the queue, at the peer because
  // `closed` is honoured even in the middle of a frame.
  segment_.control(out_).closed.store(1, std::memory_order_release);
  wake_peer_if_asked(segment_.control(out_).consumer_sleeping);
  end_after_goodbye();
}

std::vector<SendRequest*> ShmLink::stop() {
  if (timer_ != 0) engine_.cancel_timer(timer_);
  timer_ = 0;
  std::vector<SendRequest*> unsent;
  for (auto& o : sendq_) unsent.push_back(o.request);
  sendq_.clear();
  return unsent;
}

}  // namespace hcomm::transport::shm
