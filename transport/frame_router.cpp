#include "transport/frame_router.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace hcomm::transport {

// ---- FrameRouter

IncomingFrame* FrameRouter::claim_held(RecvRequest* request) {
  for (IncomingFrame* in : inputs_) {
    if (in->held() && MatchKey::of(in->header()) == request->key) {
      in->take(request);
      return in;
    }
  }
  return nullptr;
}

bool FrameRouter::holding() const {
  return std::any_of(inputs_.begin(), inputs_.end(),
                     [](const IncomingFrame* in) { return in->held(); });
}

std::chrono::microseconds FrameRouter::receiving(HoldPolicy::Clock::time_point now) const {
  auto busy = arrived_for_;
  if (arriving_ > 0 && now > arriving_since_) busy += now - arriving_since_;
  return std::chrono::duration_cast<std::chrono::microseconds>(busy);
}

void FrameRouter::data_began(HoldPolicy::Clock::time_point now) {
  if (arriving_++ == 0) arriving_since_ = now;
}

void FrameRouter::data_ended(HoldPolicy::Clock::time_point now) {
  if (arriving_ > 0 && --arriving_ == 0 && now > arriving_since_)
    arrived_for_ += now - arriving_since_;
}

void FrameRouter::fail(const Status& status) {
  // Taken first: a failed receive's callback may post another, which the link fails at once.
  std::vector<RecvRequest*> posted = posted_.take_all();
  for (IncomingFrame* in : std::vector<IncomingFrame*>(inputs_)) in->fail(status);
  for (RecvRequest* request : posted) request->on_received(status);
}

// ---- IncomingFrame

IncomingFrame::IncomingFrame(FrameRouter& router, HoldPolicy hold) : router_(router), hold_(hold) {
  router_.inputs_.push_back(this);
}

IncomingFrame::~IncomingFrame() {
  auto& inputs = router_.inputs_;
  inputs.erase(std::remove(inputs.begin(), inputs.end(), this), inputs.end());
}

IncomingFrame::Event IncomingFrame::begin(const FrameHeader& h, Clock::time_point now) {
  active_ = true;
  header_ = h;
  got_ = 0;
  route_ = Route::discard;
  request_ = nullptr;
  dst_ = nullptr;
  switch (static_cast<FrameKind>(h.kind)) {
    case FrameKind::abort:
    case FrameKind::close:
    case FrameKind::channel:
      if (h.length <= FrameRouter::kMaxControlPayload) {
        route_ = Route::control;
        payload_.resize(h.length);
        dst_ = payload_.data();
      }
      break;
    case FrameKind::data:
      data_ = true;
      router_.data_began(now);
      if (router_.observer_.should_drop(h)) break;
      if (RecvRequest* r = router_.posted_.take(MatchKey::of(h))) {
        take(r);
      } else if (hold_.holds(h.length)) {
        route_ = Route::held;
        held_since_ = now;
      } else {
        start_stash();
      }
      break;
    default:
      break;  // a kind this version does not know: dropped
  }
  if (got_ == header_.length && route_ != Route::held) return finish();
  return Event::none;
}

void IncomingFrame::take(RecvRequest* r) {
  Status st = r->accept(header_);
  if (!st.ok()) {
    route_ = Route::discard;
    dst_ = nullptr;
    r->on_received(st);  // the payload is dropped
    return;
  }
  request_ = r;
  dst_ = static_cast<std::byte*>(r->destination());
  route_ = dst_ != nullptr ? Route::direct : Route::pieces;
}

bool IncomingFrame::release_hold_if_due(Clock::time_point now) {
  if (route_ == Route::held && now < hold_deadline()) return false;
  release_hold();
  return true;
}

void IncomingFrame::release_hold() {
  if (route_ != Route::held) return;
  start_stash();
}

void IncomingFrame::start_stash() {
  route_ = Route::stash;
  payload_ = router_.unexpected_.take_buffer(std::min<size_t>(header_.length, kStashFirstBytes));
  dst_ = payload_.data();
}

void IncomingFrame::reserve_stash(size_t bytes) {
  const size_t need = got_ + bytes;
  if (route_ != Route::stash || need <= payload_.size()) return;
  const size_t grown = std::min<size_t>(
      header_.length, std::max({need, payload_.size() * 2, got_ + kStashGrowBytes}));
  payload_.resize(grown);  // keeps the bytes that arrived
  dst_ = payload_.data();
}

std::byte* IncomingFrame::target() {
  if (dst_ == nullptr) return nullptr;
  reserve_stash(std::min(missing(), kStashGrowBytes));
  return dst_ + got_;
}

size_t IncomingFrame::room() const {
  if (dst_ == nullptr) return 0;
  return route_ == Route::direct ? missing() : payload_.size() - got_;
}

size_t IncomingFrame::granularity() const {
  return route_ == Route::pieces ? request_->piece_granularity() : 1;
}

IncomingFrame::Event IncomingFrame::add(const std::byte* data, size_t bytes) {
  if (bytes > 0) {
    if (dst_ != nullptr) {
      reserve_stash(bytes);
      std::memcpy(dst_ + got_, data, bytes);
    } else if (route_ == Route::pieces) {
      request_->on_piece(got_, data, bytes);
      if (!active_) return Event::none;  // the link failed meanwhile
    }
    got_ += bytes;
    if (data_) router_.data_bytes_ += bytes;
  }
  return got_ == header_.length ? finish() : Event::none;
}

IncomingFrame::Event IncomingFrame::wrote(size_t bytes) {
  got_ += bytes;
  if (data_) router_.data_bytes_ += bytes;
  return got_ == header_.length ? finish() : Event::none;
}

IncomingFrame::Event IncomingFrame::finish() {
  // Reset first: the callbacks below may post receives, fail the link or start the next frame.
  const Route route = route_;
  const FrameHeader h = header_;
  RecvRequest* request = request_;
  Payload payload = std::move(payload_);
  active_ = false;
  route_ = Route::discard;
  request_ = nullptr;
  dst_ = nullptr;
  payload_ = Payload();
  if (std::exchange(data_, false)) router_.data_ended(Clock::now());
  switch (route) {
    case Route::direct:
    case Route::pieces:
      request->on_received(Status{});
      break;
    case Route::stash:
      // The receive may have been posted while the payload was arriving.
      if (RecvRequest* r = router_.posted_.take(MatchKey::of(h))) {
        router_.unexpected_.deliver(r, h, std::move(payload));
      } else {
        router_.unexpected_.store(h, std::move(payload));
        router_.observer_.on_frame_stored(router_.peer_, h);
      }
      break;
    case Route::control: {
      const auto kind = static_cast<FrameKind>(h.kind);
      if (kind == FrameKind::close) return Event::goodbye;
      std::string text(reinterpret_cast<const char*>(payload.data()), payload.size());
      if (kind == FrameKind::channel)
        router_.observer_.on_channel_frame(router_.peer_, h, text);
      else
        router_.observer_.on_remote_abort(router_.peer_, h.comm_id, h.op_seq, text);
      break;
    }
    case Route::held:
    case Route::discard:
      break;
  }
  return Event::none;
}

void IncomingFrame::fail(const Status& status) {
  RecvRequest* in_progress =
      route_ == Route::direct || route_ == Route::pieces ? request_ : nullptr;
  active_ = false;
  route_ = Route::discard;
  request_ = nullptr;
  dst_ = nullptr;
  if (std::exchange(data_, false)) router_.data_ended(Clock::now());
  if (in_progress != nullptr) in_progress->on_received(status);
}

}  // namespace hcomm::transport
