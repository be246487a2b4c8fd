#include "failover/replay_buffer.hpp"

#include <utility>

namespace hcomm::failover {

ReplayBuffer::Frame& ReplayBuffer::add(transport::SendRequest* request) {
  auto owned = std::make_unique<Frame>();
  Frame& f = *owned;
  f.user = request;
  f.header = request->header;
  f.header.link_seq = next_seq_++;
  const size_t bytes = f.header.length;
  f.copied = f.header.kind == static_cast<uint8_t>(transport::FrameKind::data) &&
             bytes <= kStageMaxBytes && copied_bytes_ + bytes <= kStageBudget;
  if (f.copied) {
    if (!spare_.empty()) {
      f.staged = std::move(spare_.back());
      spare_.pop_back();
    }
    f.staged.assign(static_cast<const std::byte*>(request->payload),
                    static_cast<const std::byte*>(request->payload) + bytes);
    f.payload = f.staged.data();
    copied_bytes_ += bytes;
  } else {
    f.payload = request->payload;
    f.buffer = request->buffer;
    f.buffer_bytes = request->buffer_bytes;
    f.header.flags |= transport::kFrameAckNow;
  }
  frames_.emplace(f.header.link_seq, std::move(owned));
  return f;
}

ReplayBuffer::Frame* ReplayBuffer::find(uint64_t seq) {
  auto it = frames_.find(seq);
  return it == frames_.end() ? nullptr : it->second.get();
}

std::vector<uint64_t> ReplayBuffer::acknowledge(uint64_t cumulative,
                                                const std::vector<AckRange>& ranges) {
  std::vector<uint64_t> acked;
  auto take = [&](Frame& f) {
    if (f.acked) return;
    f.acked = true;
    acked.push_back(f.header.link_seq);
  };
  for (auto it = frames_.begin(); it != frames_.end() && it->first <= cumulative; ++it)
    take(*it->second);
  for (const AckRange& r : ranges)
    for (auto it = frames_.lower_bound(r.first); it != frames_.end() && it->first <= r.last; ++it)
      take(*it->second);
  return acked;
}

transport::SendRequest* ReplayBuffer::remove(uint64_t seq) {
  auto it = frames_.find(seq);
  if (it == frames_.end()) return nullptr;
  transport::SendRequest* user = std::exchange(it->second->user, nullptr);
  recycle(*it->second);
  frames_.erase(it);
  return user;
}

void ReplayBuffer::idle(std::vector<uint64_t>& done, std::vector<uint64_t>& again) const {
  for (const auto& [seq, f] : frames_) {
    if (f->in_flight) continue;
    (f->acked ? done : again).push_back(seq);
  }
}

std::vector<transport::SendRequest*> ReplayBuffer::take_requests() {
  std::vector<transport::SendRequest*> out;
  for (auto& [seq, f] : frames_)
    if (f->user != nullptr) out.push_back(std::exchange(f->user, nullptr));
  return out;
}

void ReplayBuffer::clear() {
  frames_.clear();
  copied_bytes_ = 0;
}

void ReplayBuffer::recycle(Frame& f) {
  if (f.staged.capacity() == 0) return;
  copied_bytes_ -= f.staged.size();
  if (spare_.size() < kSpareBuffers) spare_.push_back(std::move(f.staged));
}

}  // namespace hcomm::failover
