// The receiving side of the reliable channel's sequence numbers: which frames of the peer have
// been delivered to their receive, so that a frame replayed after a failover is delivered once.
// Frames are delivered out of order (a frame waits for its receive to be posted), so the window
// is a cumulative point — every sequence number up to it is delivered — plus the delivered ones
// above it. Acknowledgements carry the same two things.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace hcomm::failover {

class DeliveryWindow {
 public:
  bool delivered(uint64_t seq) const { return seq <= cumulative_ || above_.count(seq) != 0; }
  /// Marks `seq` delivered (idempotent).
  void mark(uint64_t seq) {
    if (seq <= cumulative_) return;
    above_.insert(seq);
    while (!above_.empty() && *above_.begin() == cumulative_ + 1) {
      ++cumulative_;
      above_.erase(above_.begin());
    }
  }
  uint64_t cumulative() const { return cumulative_; }
  /// The delivered numbers above cumulative() as [first, last] ranges, at most `max` of them.
  std::vector<std::pair<uint64_t, uint64_t>> ranges(size_t max) const {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (uint64_t s : above_) {
      if (!out.empty() && out.back().second + 1 == s) {
        out.back().second = s;
      } else {
        if (out.size() == max) break;
        out.emplace_back(s, s);
      }
    }
    return out;
  }

 private:
  uint64_t cumulative_ = 0;  // sequence numbers start at 1
  std::set<uint64_t> above_;
};

}  // namespace hcomm::failover
