#include "transport/frame_assembler.hpp"

#include <cstring>
#include <string>
#include <utility>

namespace hcomm::transport {

FrameAssembler::Outcome FrameAssembler::begin(const FrameHeader& h) {
  cur_ = Incoming();
  cur_.active = true;
  cur_.header = h;
  switch (static_cast<FrameKind>(h.kind)) {
    case FrameKind::abort:
    case FrameKind::close:
    case FrameKind::channel:
      if (h.length <= kMaxControlPayload) {
        cur_.target = Target::control;
        cur_.payload.resize(h.length);
      }
      break;
    case FrameKind::data:
      if (observer_.should_drop(h)) break;
      if (RecvRequest* r = posted_.take(MatchKey::of(h))) {
        Status st = r->accept(h);
        if (!st.ok()) {
          r->on_received(st);  // the payload is dropped
          break;
        }
        cur_.request = r;
        cur_.dst = static_cast<std::byte*>(r->destination());
        cur_.target = cur_.dst != nullptr ? Target::direct : Target::pieces;
      } else {
        cur_.target = Target::stash;
        cur_.payload = unexpected_.take_buffer(h.length);
      }
      break;
    default:
      break;  // a kind this version does not know: dropped
  }
  if (cur_.active && cur_.got == cur_.header.length) return finish();
  return Outcome::more;
}

FrameAssembler::Outcome FrameAssembler::add(const std::byte* data, size_t bytes) {
  if (bytes > 0) {
    switch (cur_.target) {
      case Target::direct:
        std::memcpy(cur_.dst + cur_.got, data, bytes);
        break;
      case Target::pieces:
        cur_.request->on_piece(cur_.got, data, bytes);
        if (!cur_.active) return Outcome::more;  // the link failed meanwhile
        break;
      case Target::stash:
      case Target::control:
        std::memcpy(cur_.payload.data() + cur_.got, data, bytes);
        break;
      case Target::discard:
        break;
    }
    cur_.got += bytes;
  }
  if (cur_.got == cur_.header.length) return finish();
  return Outcome::more;
}

FrameAssembler::Outcome FrameAssembler::finish() {
  Incoming f = std::move(cur_);  // the callbacks below may receive the next frame
  cur_ = Incoming();
  switch (f.target) {
    case Target::direct:
    case Target::pieces:
      f.request->on_received(Status{});
      break;
    case Target::stash:
      // The receive may have been posted while the payload was arriving.
      if (RecvRequest* r = posted_.take(MatchKey::of(f.header)))
        unexpected_.deliver(r, f.header, std::move(f.payload));
      else {
        unexpected_.store(f.header, std::move(f.payload));
        observer_.on_frame_stored(peer_, f.header);
      }
      break;
    case Target::control:
      if (static_cast<FrameKind>(f.header.kind) == FrameKind::close) return Outcome::goodbye;
      if (static_cast<FrameKind>(f.header.kind) == FrameKind::channel) {
        observer_.on_channel_frame(
            peer_, f.header,
            std::string(reinterpret_cast<const char*>(f.payload.data()), f.payload.size()));
        break;
      }
      observer_.on_remote_abort(
          peer_, f.header.comm_id, f.header.op_seq,
          std::string(reinterpret_cast<const char*>(f.payload.data()), f.payload.size()));
      break;
    case Target::discard:
      break;
  }
  return Outcome::more;
}

void FrameAssembler::fail(const Status& status) {
  RecvRequest* in_progress =
      cur_.target == Target::direct || cur_.target == Target::pieces ? cur_.request : nullptr;
  cur_ = Incoming();
  if (in_progress != nullptr) in_progress->on_received(status);
}

}  // namespace hcomm::transport
