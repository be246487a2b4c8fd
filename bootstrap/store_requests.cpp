#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "bootstrap/store_server_impl.hpp"
#include "bootstrap/store_wire.hpp"

namespace hcomm::bootstrap {

using namespace store_wire;  // NOLINT: the wire vocabulary is this file's subject
using Clock = std::chrono::steady_clock;

void StoreServer::Impl::handle(uint64_t id, Conn& c, const char* body, uint32_t len) {
  using Outcome = Request::Outcome;
  Request req = decode_request(body, len, c.greeted);
  switch (req.outcome) {
    case Outcome::ok:
      break;
    case Outcome::empty:
      return protocol_error(c, "sent an empty frame");
    case Outcome::not_hello:
      return protocol_error(c, "is not an hcomm store client (no HELLO)");
    case Outcome::unknown:
      return protocol_error(c, "sent unknown request " + std::to_string(req.op));
    case Outcome::malformed:
      return protocol_error(c, "sent a malformed request " + std::to_string(req.op));
    case Outcome::key_too_long:
      return reply_error(c, "key of " + std::to_string(req.key.size()) +
                                " bytes is above the limit of " + std::to_string(kMaxKeyBytes));
  }
  if (!c.greeted) {
    if (req.version != kVersion) {
      reply_error(c, "store protocol version " + std::to_string(req.version) +
                         " is not supported; this root speaks version " + std::to_string(kVersion) +
                         ": run the same hcomm on every rank");
      c.closing = true;
      return flush(c);
    }
    c.greeted = true;
    greet_timers.erase({c.greet_deadline, id});
    return send_frame(c, FrameWriter().u8(kOk).u32(kVersion).take());
  }
  switch (req.op) {
    case kSet: {
      if (req.value.size() > kMaxValueBytes) {
        return reply_error(c, "value of " + std::to_string(req.value.size()) +
                                  " bytes is above the limit of " + std::to_string(kMaxValueBytes));
      }
      Status st = data.set(req.key, std::move(req.value));
      if (!st.ok()) return reply_error(c, st.message());
      send_frame(c, FrameWriter().u8(kOk).take());
      return wake(req.key);
    }
    case kGet: {
      if (const std::string* value = data.find(req.key))
        return send_frame(c, FrameWriter().u8(kOk).str(*value).take());
      if (req.timeout_ms == 0) return send_frame(c, FrameWriter().u8(kTimeout).take());
      return park(id, c, kGet, {req.key}, req.timeout_ms);
    }
    case kTime: {
      const auto now = std::chrono::steady_clock::now().time_since_epoch();
      return send_frame(c,
                        FrameWriter()
                            .u8(kOk)
                            .u64(static_cast<uint64_t>(
                                std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()))
                            .take());
    }
    case kAdd: {
      auto next = data.add(req.key, static_cast<int64_t>(req.delta));
      if (!next.ok()) return reply_error(c, next.status().message());
      send_frame(c, FrameWriter().u8(kOk).u64(static_cast<uint64_t>(next.value())).take());
      return wake(req.key);
    }
    case kWait: {
      std::vector<std::string> absent;
      std::unordered_set<std::string> seen;
      for (auto& key : req.keys) {
        if (!data.contains(key) && seen.insert(key).second) absent.push_back(std::move(key));
      }
      if (absent.empty()) return send_frame(c, FrameWriter().u8(kOk).take());
      if (req.timeout_ms == 0) return send_frame(c, wait_timeout_reply(absent));
      return park(id, c, kWait, std::move(absent), req.timeout_ms);
    }
  }
}

std::string StoreServer::Impl::wait_timeout_reply(const std::vector<std::string>& keys) {
  FrameWriter w;
  w.u8(kTimeout);
  std::vector<const std::string*> absent;
  for (const auto& k : keys) {
    if (!data.contains(k)) absent.push_back(&k);
  }
  w.u32(static_cast<uint32_t>(absent.size()));
  for (const auto* k : absent) w.str(*k);
  return w.take();
}

void StoreServer::Impl::park(uint64_t id, Conn& c, uint8_t op, std::vector<std::string> keys,
                             uint32_t timeout_ms) {
  c.parked = true;
  c.op = op;
  c.keys = std::move(keys);
  c.remaining = c.keys.size();
  c.deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  timers.emplace(c.deadline, id);
  for (const auto& k : c.keys) waiters[k].push_back(id);
}

void StoreServer::Impl::unpark(uint64_t id, Conn& c) {
  timers.erase({c.deadline, id});
  for (const auto& k : c.keys) {
    auto it = waiters.find(k);
    if (it == waiters.end()) continue;
    auto& ids = it->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) waiters.erase(it);
  }
  c.parked = false;
  c.keys.clear();
  c.remaining = 0;
  runnable.push_back(id);
}

void StoreServer::Impl::wake(const std::string& key) {
  auto it = waiters.find(key);
  if (it == waiters.end()) return;
  std::vector<uint64_t> ids = std::move(it->second);
  waiters.erase(it);
  for (uint64_t id : ids) {
    auto cit = conns.find(id);
    if (cit == conns.end() || !cit->second.parked) continue;
    Conn& c = cit->second;
    if (--c.remaining > 0) continue;
    if (c.op == kGet) {
      send_frame(c, FrameWriter().u8(kOk).str(*data.find(c.keys.front())).take());
    } else {
      send_frame(c, FrameWriter().u8(kOk).take());
    }
    unpark(id, c);
  }
}

void StoreServer::Impl::expire(Clock::time_point now) {
  while (!timers.empty() && timers.begin()->first <= now) {
    uint64_t id = timers.begin()->second;
    timers.erase(timers.begin());
    auto it = conns.find(id);
    if (it == conns.end() || !it->second.parked) continue;
    Conn& c = it->second;
    if (c.op == kGet) {
      send_frame(c, FrameWriter().u8(kTimeout).take());
    } else {
      send_frame(c, wait_timeout_reply(c.keys));
    }
    unpark(id, c);
  }
}

}  // namespace hcomm::bootstrap
