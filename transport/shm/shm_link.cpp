#include "transport/shm/shm_link.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "core/log.hpp"
#include "transport/shm/cell_copy.hpp"

namespace hcomm::transport::shm {
namespace {

constexpr uint64_t kCells = LinkSegment::kCells;
constexpr size_t kCellBytes = LinkSegment::kCellBytes;
// An unmatched frame at least this large waits in the ring for its receive (up to kHold), so it
// is copied once, straight into place; a smaller one is copied aside at once.
constexpr size_t kHoldMinBytes = 4096;
constexpr auto kHold = std::chrono::microseconds(200);
// Frames this large are copied out with streaming stores (see cell_copy.hpp). Measured on 2
// ranks, alternating builds: from 8 MiB frames on, 4-8 MiB allreduces ran 1.2-1.4x faster than
// with 2 MiB (their destinations still fit in cache), 16-64 MiB alike.
constexpr size_t kStreamMinBytes = 8 << 20;
constexpr auto kAttachRetry = std::chrono::microseconds(500);

std::string bell_name(uint64_t uid, int from, int to) {
  char buf[80];
  std::snprintf(buf, sizeof(buf), "hcomm-bell-%016" PRIx64 "-%d-%d", uid, from, to);
  return buf;
}

}  // namespace

ShmLink::ShmLink(ProgressEngine& engine, ShmLinkParams params, LinkObserver& observer,
                 UpCallback on_up)
    : engine_(engine),
      params_(params),
      observer_(observer),
      on_up_(std::move(on_up)),
      stamp_{params.my_rank, params.bytes_sent} {
  const int lo = std::min(params_.my_rank, params_.peer);
  const int hi = std::max(params_.my_rank, params_.peer);
  segment_name_ = LinkSegment::name_for(params_.comm_uid, lo, hi);
  name_ = "shm /dev/shm/" + segment_name_ + " (rank " + std::to_string(params_.peer) + ")";
  my_bell_name_ = bell_name(params_.comm_uid, params_.my_rank, params_.peer);
  peer_bell_name_ = bell_name(params_.comm_uid, params_.peer, params_.my_rank);
  out_ = params_.my_rank < params_.peer ? 0 : 1;
  in_ = 1 - out_;
}

ShmLink::~ShmLink() {
  if (timer_ != 0) engine_.cancel_timer(timer_);
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
  if (!bell.ok()) return fail(bell.status(), false);
  bell_ = std::move(bell.value());
  if (params_.my_rank < params_.peer) {
    auto seg = LinkSegment::create(segment_name_, params_.comm_uid);
    if (!seg.ok()) return fail(seg.status(), false);
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
    return went_up();
  }
  if (Clock::now() >= deadline) {
    SharedSegment::unlink(segment_name_);
    return fail({HCOMM_ERR_TIMEOUT, "rank " + std::to_string(params_.peer) +
                                        " never mapped /dev/shm/" + segment_name_ +
                                        " (is it on this host? HCOMM_HOST_ID must differ between "
                                        "hosts that share a boot id)"},
                false);
  }
  timer_ =
      engine_.add_timer(Clock::now() + kAttachRetry, [this, deadline] { wait_attached(deadline); });
}

void ShmLink::try_attach(Clock::time_point deadline) {
  timer_ = 0;
  bool not_yet = false;
  auto seg = LinkSegment::attach(segment_name_, params_.comm_uid, &not_yet);
  if (seg.ok()) {
    segment_ = std::move(seg.value());
    peer_process_ = segment_.header().creator;
    return went_up();
  }
  if (!not_yet) return fail(seg.status(), false);
  if (Clock::now() >= deadline)
    return fail(
        {HCOMM_ERR_TIMEOUT, "rank " + std::to_string(params_.peer) + " never created /dev/shm/" +
                                segment_name_ + ": " + seg.status().message()},
        false);
  timer_ =
      engine_.add_timer(Clock::now() + kAttachRetry, [this, deadline] { try_attach(deadline); });
}

void ShmLink::went_up() {
  up_ = true;
  registered_ = true;
  engine_.add_poller(this);
  engine_.add_fd(bell_.fd(), EPOLLIN, this);
  timer_ = engine_.add_timer(Clock::now() + ProcessIdentity::kCheckPeriod,
                             [this] { check_peer_alive(); });
  HCOMM_LOG(info, core::log::kNet, "link up: %s", name_.c_str());
  if (on_up_) std::exchange(on_up_, nullptr)(Status{});
}

void ShmLink::check_peer_alive() {
  timer_ = 0;
  if (!error_.ok()) return;
  // What a peer wrote before it exited (its goodbye included) counts before its death does.
  pump_receives();
  if (!error_.ok()) return;
  if (!peer_process_.alive())
    return fail({HCOMM_ERR_PEER_LOST, "rank " + std::to_string(params_.peer) + " (pid " +
                                          std::to_string(peer_process_.pid) +
                                          ", this host) exited without closing its communicator"},
                false);
  timer_ = engine_.add_timer(Clock::now() + ProcessIdentity::kCheckPeriod,
                             [this] { check_peer_alive(); });
}

// ---- sending

void ShmLink::post_send(SendRequest* request) {
  if (!stamp_.admit(request, error_, peer_closed_)) return;
  Outgoing& o = sendq_.emplace_back();
  o.header = request->header;
  o.payload = static_cast<const std::byte*>(request->payload);
  o.request = request;
  pump_sends();
}

void ShmLink::send_control(const FrameHeader& header, std::string payload) {
  if (!error_.ok() || !up_ || closing_) return;
  Outgoing& o = sendq_.emplace_back();
  o.owned = std::move(payload);
  o.header = header;
  o.header.length = o.owned.size();
  stamp_.stamp(o.header);
  pump_sends();
}

bool ShmLink::pump_sends() {
  if (pumping_ || !up_) return false;
  pumping_ = true;
  RingControl& ring = segment_.control(out_);
  bool worked = false;
  while (!sendq_.empty()) {
    if (out_tail_ - out_head_seen_ >= kCells) {
      out_head_seen_ = ring.head.load(std::memory_order_acquire);
      if (out_tail_ - out_head_seen_ >= kCells) break;  // full: the consumer frees cells
    }
    Outgoing& o = sendq_.front();
    if (!o.started) {
      segment_.cell_header(out_, out_tail_) = o.header;
      o.started = true;
    }
    const size_t n = std::min<size_t>(kCellBytes, o.header.length - o.written);
    const std::byte* src =
        o.payload != nullptr ? o.payload : reinterpret_cast<const std::byte*>(o.owned.data());
    if (n > 0)
      writer_.write(segment_.cell_data(out_, out_tail_), src + o.written, n, n == kCellBytes);
    o.written += n;
    ring.tail.store(++out_tail_, std::memory_order_release);
    worked = true;
    if (o.written < o.header.length) continue;
    SendRequest* done = o.request;
    sendq_.pop_front();
    if (done != nullptr) done->on_sent(Status{});  // may post more: the loop picks them up
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

void ShmLink::post_recv(RecvRequest* request) {
  // Frames that arrived before the link ended are still delivered.
  if (unexpected_.deliver_stored(request)) return;
  if (!error_.ok()) return request->on_received(error_);
  if (cur_.active && cur_.holding && MatchKey::of(cur_.header) == request->key) {
    // The engine's next poll reads it. Not from here: the executor posts receives while it
    // starts an operation's steps, and a large frame read now would hold back the sends queued
    // behind this receive (measured: a 4 MiB allreduce's second-half send waited 60 us for the
    // peer's second half to be read first, every third iteration).
    match(request);
    cur_.holding = false;
    return;
  }
  posted_.post(request);
}

bool ShmLink::cancel_recv(RecvRequest* request) {
  return posted_.cancel(request);
}

void ShmLink::match(RecvRequest* request) {
  cur_.request = request;
  cur_.rejected = request->accept(cur_.header);
  if (!cur_.rejected.ok()) {
    cur_.drop = true;
  } else {
    cur_.dst = static_cast<std::byte*>(request->destination());
  }
}

bool ShmLink::begin_frame() {
  const FrameHeader& h = cur_.header;
  if (h.kind != static_cast<uint8_t>(FrameKind::data)) return true;  // read into `payload`
  if (observer_.should_drop(h)) {
    cur_.drop = true;
    return true;
  }
  if (RecvRequest* r = posted_.take(MatchKey::of(h))) {
    match(r);
    return true;
  }
  if (h.length >= kHoldMinBytes) {
    const auto now = Clock::now();
    if (!cur_.holding) {
      cur_.holding = true;
      cur_.held_since = now;
      return false;
    }
    if (now - cur_.held_since < kHold) return false;
    cur_.holding = false;
  }
  cur_.stash = true;
  cur_.payload = unexpected_.take_buffer(h.length);
  return true;
}

bool ShmLink::pump_receives() {
  if (receiving_ || !up_) return false;
  receiving_ = true;
  RingControl& ring = segment_.control(in_);
  bool worked = false;
  while (error_.ok()) {
    if (in_head_ == in_tail_seen_) {
      in_tail_seen_ = ring.tail.load(std::memory_order_acquire);
      if (in_head_ == in_tail_seen_) break;
    }
    if (!cur_.active) {
      cur_ = Incoming();
      cur_.header = segment_.cell_header(in_, in_head_);
      cur_.active = true;
      if ((cur_.header.magic != FrameHeader::kMagic ||
           cur_.header.version != FrameHeader::kVersion)) {
        receiving_ = false;
        fail({HCOMM_ERR_INTERNAL, name_ + ": corrupt frame header in the ring"}, false);
        return true;
      }
      if (cur_.header.kind != static_cast<uint8_t>(FrameKind::data))
        cur_.payload = unexpected_.take_buffer(cur_.header.length);
    }
    if (cur_.holding || (cur_.request == nullptr && !cur_.drop && !cur_.stash &&
                         cur_.header.kind == static_cast<uint8_t>(FrameKind::data))) {
      if (!begin_frame()) break;  // held: wait for the receive (post_recv resumes)
    }
    const size_t n = std::min<size_t>(kCellBytes, cur_.header.length - cur_.got);
    const std::byte* data = segment_.cell_data(in_, in_head_);
    if (n > 0 && !cur_.drop) {
      if (cur_.stash || cur_.header.kind != static_cast<uint8_t>(FrameKind::data)) {
        cell_copy(cur_.payload.data() + cur_.got, data, n);
      } else if (cur_.dst != nullptr) {
        if (cur_.header.length >= kStreamMinBytes)
          stream_copy(cur_.dst + cur_.got, data, n);
        else
          cell_copy(cur_.dst + cur_.got, data, n);
      } else {
        cur_.request->on_piece(cur_.got, data, n);  // e.g. reduces straight from the ring
      }
    }
    cur_.got += n;
    ring.head.store(++in_head_, std::memory_order_release);
    worked = true;
    if (cur_.got == cur_.header.length) finish_frame();
  }
  if (worked) wake_peer_if_asked(segment_.control(in_).producer_waiting);
  // A peer that closed sets `closed` after its last cell: seen only once the ring is empty (a
  // frame it cut short fails with the rest).
  if (error_.ok() && in_head_ == in_tail_seen_ &&
      ring.closed.load(std::memory_order_acquire) != 0 &&
      ring.tail.load(std::memory_order_acquire) == in_head_) {
    HCOMM_LOG(info, core::log::kNet, "%s closed its communicator", name_.c_str());
    fail({HCOMM_ERR_PEER_LOST,
          "rank " + std::to_string(params_.peer) + " has destroyed its communicator"},
         true);
  }
  receiving_ = false;
  return worked;
}

void ShmLink::finish_frame() {
  Incoming f = std::move(cur_);  // callbacks below may start the next frame
  cur_ = Incoming();
  const auto kind = static_cast<FrameKind>(f.header.kind);
  if (kind == FrameKind::abort || kind == FrameKind::channel) {
    std::string text(reinterpret_cast<const char*>(f.payload.data()), f.payload.size());
    if (kind == FrameKind::channel) return observer_.on_channel_frame(params_.peer, f.header, text);
    observer_.on_remote_abort(params_.peer, f.header.comm_id, f.header.op_seq, text);
    return;
  }
  if (kind != FrameKind::data) return;
  if (f.stash) {
    // The receive may have been posted while the payload was being copied aside.
    if (RecvRequest* r = posted_.take(MatchKey::of(f.header)))
      return unexpected_.deliver(r, f.header, std::move(f.payload));
    unexpected_.store(f.header, std::move(f.payload));
    return observer_.on_frame_stored(params_.peer, f.header);
  }
  if (f.dst != nullptr && f.header.length >= kStreamMinBytes) stream_fence();
  if (f.request != nullptr) f.request->on_received(f.rejected);
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
  if (!up_ || !error_.ok()) return true;
  if (cur_.holding) return false;  // the hold expires without anyone ringing
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

void ShmLink::on_events(int /*fd*/, uint32_t /*events*/) {
  bell_.drain();
  poll();
}

// ---- closing and failing

void ShmLink::close() {
  if (closing_) return;
  closing_ = true;
  if (!up_ || !error_.ok()) return;
  // A frame cut short by this is failed on both sides: here with the queue (fail() below), at the
  // peer because `closed` is honoured even in the middle of a frame.
  segment_.control(out_).closed.store(1, std::memory_order_release);
  wake_peer_if_asked(segment_.control(out_).consumer_sleeping);
  fail({HCOMM_ERR_ABORTED, "the communicator was closed"}, false);
}

void ShmLink::abandon() {
  closing_ = true;  // no report to the observer
  fail({HCOMM_ERR_ABORTED, name_ + " was abandoned for another link"}, false);
}

void ShmLink::fail(const Status& status, bool graceful) {
  if (!error_.ok()) return;
  error_ = status;
  peer_closed_ = graceful;
  const bool was_up = up_;
  up_ = false;
  if (timer_ != 0) engine_.cancel_timer(timer_);
  timer_ = 0;
  // After the peer's goodbye, frames to it are dropped as delivered (see post_send).
  const Status send_status = graceful ? Status{} : status;
  auto queued = std::move(sendq_);
  sendq_.clear();
  for (auto& o : queued)
    if (o.request != nullptr) o.request->on_sent(send_status);
  auto posted = posted_.take_all();
  if (cur_.active && cur_.request != nullptr) {
    RecvRequest* r = cur_.request;
    cur_ = Incoming();
    r->on_received(status);
  }
  for (RecvRequest* request : posted) request->on_received(status);
  if (on_up_) std::exchange(on_up_, nullptr)(status);
  if (was_up && !closing_) observer_.on_link_failed(params_.peer, status, graceful);
}

}  // namespace hcomm::transport::shm
