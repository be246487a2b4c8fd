// Receives a link has been given but not yet matched with a frame, by match key: the other half
// of UnexpectedFrames, shared by every transport's link.
#pragma once

#include <unordered_map>
#include <vector>

#include "transport/frame.hpp"
#include "transport/link.hpp"

namespace hcomm::transport {

class PostedReceives {
 public:
  void post(RecvRequest* request) { requests_[request->key] = request; }

  /// The receive posted for `key`, no longer posted; nullptr when there is none.
  RecvRequest* take(const MatchKey& key) {
    auto it = requests_.find(key);
    if (it == requests_.end()) return nullptr;
    RecvRequest* request = it->second;
    requests_.erase(it);
    return request;
  }

  /// Withdraws `request`; false when it is not posted (matched already, or never posted).
  bool cancel(RecvRequest* request) {
    auto it = requests_.find(request->key);
    if (it == requests_.end() || it->second != request) return false;
    requests_.erase(it);
    return true;
  }

  /// Every posted receive, none posted any more (to fail them).
  std::vector<RecvRequest*> take_all() {
    std::vector<RecvRequest*> all;
    all.reserve(requests_.size());
    for (auto& [key, request] : requests_) all.push_back(request);
    requests_.clear();
    return all;
  }

 private:
  std::unordered_map<MatchKey, RecvRequest*, MatchKeyHash> requests_;
};

}  // namespace hcomm::transport
