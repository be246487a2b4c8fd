#include "transport/medium_link.hpp"

#include "core/log.hpp"

namespace hcomm::transport {

MediumLink::MediumLink(LinkObserver& observer, Identity id, std::string name, UpCallback on_up)
    : observer_(observer),
      id_(id),
      name_(std::move(name)),
      on_up_(std::move(on_up)),
      router_(observer, id.peer) {}

void MediumLink::went_up() {
  up_ = true;
  HCOMM_LOG(info, core::log::kNet, "link up: %s", name_.c_str());
  if (on_up_) std::exchange(on_up_, nullptr)(Status{});
}

// ---- sending

void MediumLink::post_send(SendRequest* request) {
  // A probe measures the path; it is nobody's payload.
  if (id_.bytes_sent != nullptr && request->header.kind == static_cast<uint8_t>(FrameKind::data) &&
      (request->header.flags & kFrameProbe) == 0)
    id_.bytes_sent->fetch_add(request->header.length, std::memory_order_relaxed);
  if (!error_.ok()) return request->on_sent(peer_closed_ ? Status{} : error_);
  request->header.src_rank = id_.my_rank;
  send_frame(request);
}

ControlFrame* MediumLink::make_control(FrameKind kind, const FrameHeader& header,
                                       std::string text) const {
  FrameHeader h = header;
  h.kind = static_cast<uint8_t>(kind);
  h.src_rank = id_.my_rank;
  if (h.comm_id == 0) h.comm_id = id_.comm_id;
  return new ControlFrame(h, std::move(text));
}

void MediumLink::send_control(const FrameHeader& header, std::string payload) {
  if (!error_.ok() || !up_ || closing_) return;
  send_frame(make_control(static_cast<FrameKind>(header.kind), header, std::move(payload)));
}

// ---- receiving

void MediumLink::post_recv(RecvRequest* request) {
  // Frames that arrived before the link ended are still delivered (a peer may send and then
  // destroy its communicator before this rank posts the matching receive).
  if (router_.deliver_stored(request)) return;
  if (!error_.ok()) return request->on_received(error_);
  if (IncomingFrame* input = router_.claim_held(request)) return on_claimed(*input);
  router_.post(request);
}

// ---- ending

void MediumLink::close() {
  if (closing_) return;
  closing_ = true;
  if (!up_ || !error_.ok()) return;
  say_goodbye();
}

void MediumLink::abandon() {
  closing_ = true;
  fail({HCOMM_ERR_ABORTED, name_ + " was abandoned for another link"});
}

void MediumLink::end_after_goodbye() {
  closing_ = true;
  fail({HCOMM_ERR_ABORTED, "the communicator was closed"});
}

void MediumLink::end_quietly(const Status& status) {
  closing_ = true;
  fail(status);
}

void MediumLink::peer_closed() {
  HCOMM_LOG(info, core::log::kNet, "%s closed its communicator", name_.c_str());
  fail(
      {HCOMM_ERR_PEER_LOST, "rank " + std::to_string(id_.peer) + " has destroyed its communicator"},
      /*graceful=*/true);
}

void MediumLink::fail(const Status& status, bool graceful) {
  if (!error_.ok()) return;
  error_ = status;
  peer_closed_ = graceful;
  const bool was_up = up_;
  up_ = false;
  if (was_up && !graceful && !closing_)
    HCOMM_LOG(warn, core::log::kNet, "%s", status.message().c_str());
  std::vector<SendRequest*> unsent = stop();
  // After the peer's goodbye, frames to it are dropped as delivered (see post_send).
  const Status send_status = graceful ? Status{} : status;
  for (SendRequest* request : unsent) request->on_sent(send_status);
  router_.fail(status);
  if (on_up_) std::exchange(on_up_, nullptr)(status);
  if (was_up && !closing_) observer_.on_link_failed(id_.peer, status, graceful);
}

MediumCounters MediumLink::medium_counters() const {
  MediumCounters c = delivery_counters();
  c.bytes_received = router_.data_bytes();
  c.receiving_us = static_cast<uint64_t>(router_.receiving(HoldPolicy::Clock::now()).count());
  return c;
}

}  // namespace hcomm::transport
