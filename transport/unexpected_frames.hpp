// Frames that arrived before their receive was posted, kept by a link until it is: one place
// for every transport's "store aside, deliver later" path.
#pragma once

#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "transport/frame.hpp"
#include "transport/link.hpp"
#include "transport/payload.hpp"

namespace hcomm::transport {

class UnexpectedFrames {
 public:
  /// A buffer for a payload about to be stored (recycled).
  Payload take_buffer(size_t bytes) { return pool_.take(bytes); }

  void store(const FrameHeader& header, Payload payload) {
    frames_[MatchKey::of(header)] = Stored{header, std::move(payload)};
  }

  /// Hands a stored frame matching `request` to it; false when none is stored.
  bool deliver_stored(RecvRequest* request) {
    auto it = frames_.find(request->key);
    if (it == frames_.end()) return false;
    Stored stored = std::move(it->second);
    frames_.erase(it);
    deliver(request, stored.header, std::move(stored.payload));
    return true;
  }

  /// Checks `header` with the request, copies or hands over the payload, completes the request.
  void deliver(RecvRequest* request, const FrameHeader& header, Payload payload) {
    Status st = request->accept(header);
    if (st.ok()) {
      if (void* dst = request->destination()) {
        if (!payload.empty()) std::memcpy(dst, payload.data(), payload.size());
      } else if (!payload.empty()) {
        request->on_piece(0, payload.data(), payload.size());
      }
    }
    pool_.give(std::move(payload));
    request->on_received(st);
  }

  void clear() { frames_.clear(); }
  bool contains(const MatchKey& key) const { return frames_.count(key) != 0; }
  bool empty() const { return frames_.empty(); }

  /// Every stored frame, handed over (a failover moves them off a link that is going away).
  std::vector<std::pair<FrameHeader, Payload>> take_all() {
    std::vector<std::pair<FrameHeader, Payload>> out;
    for (auto& [key, stored] : frames_) out.emplace_back(stored.header, std::move(stored.payload));
    frames_.clear();
    return out;
  }

 private:
  struct Stored {
    FrameHeader header;
    Payload payload;
  };
  std::unordered_map<MatchKey, Stored, MatchKeyHash> frames_;
  PayloadPool pool_;
};

}  // namespace hcomm::transport
