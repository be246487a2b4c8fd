#include "bootstrap/store_wire.hpp"

namespace hcomm::bootstrap::store_wire {

FrameCut cut_frame(const char* data, size_t avail, bool greeted) {
  FrameCut cut;
  if (avail < 4) return cut;
  cut.length = load_u32(data);
  if (!greeted && cut.length > kMaxHelloBytes) {
    cut.kind = FrameCut::Kind::oversized_hello;
  } else if (cut.length > kMaxFrameBytes) {
    cut.kind = FrameCut::Kind::oversized;
  } else if (avail >= 4 + size_t{cut.length}) {
    cut.kind = FrameCut::Kind::frame;
  }
  return cut;
}

Request decode_request(const char* body, size_t len, bool greeted) {
  using Outcome = Request::Outcome;
  Request req;
  FrameReader r(body, len);
  auto outcome = [&req](Outcome o) {
    req.outcome = o;
    return std::move(req);
  };
  auto key_checked = [&] {
    return outcome(req.key.size() > kMaxKeyBytes ? Outcome::key_too_long : Outcome::ok);
  };
  if (!r.u8(&req.op)) return outcome(Outcome::empty);
  if (!greeted) {
    uint32_t magic = 0;
    if (req.op != kHello || !r.u32(&magic) || !r.u32(&req.version) || magic != kMagic)
      return outcome(Outcome::not_hello);
    return outcome(Outcome::ok);
  }
  switch (req.op) {
    case kSet:
      if (!r.str(&req.key) || !r.str(&req.value) || r.left() != 0) break;
      return key_checked();
    case kGet:
      if (!r.u32(&req.timeout_ms) || !r.str(&req.key) || r.left() != 0) break;
      return key_checked();
    case kTime:
      if (r.left() != 0) break;
      return outcome(Outcome::ok);
    case kAdd:
      if (!r.str(&req.key) || !r.u64(&req.delta) || r.left() != 0) break;
      return key_checked();
    case kWait: {
      uint32_t count = 0;
      if (!r.u32(&req.timeout_ms) || !r.u32(&count)) break;
      for (uint32_t i = 0; i < count; ++i) {
        std::string key;
        if (!r.str(&key)) return outcome(Outcome::malformed);
        if (key.size() > kMaxKeyBytes) {
          req.key = std::move(key);
          return outcome(Outcome::key_too_long);
        }
        req.keys.push_back(std::move(key));
      }
      if (r.left() != 0) break;
      return outcome(Outcome::ok);
    }
    default:
      return outcome(Outcome::unknown);
  }
  return outcome(Outcome::malformed);
}

}  // namespace hcomm::bootstrap::store_wire
