// A schedule: an operation expanded into steps with dependencies, built by an algorithm and run
// by the ScheduleExecutor. Chunked algorithms give each chunk its own steps, so chunk k+1 travels
// while chunk k is being reduced: pipelining falls out of the dependencies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace hcomm::collectives {

struct Step {
  enum class Kind : uint8_t {
    send,         ///< send `bytes` from `src` to `peer`
    recv,         ///< receive `bytes` from `peer` into `dst`
    recv_reduce,  ///< dst = src (op) incoming, `bytes` from `peer`
    copy,         ///< dst = src (local)
    average,      ///< dst /= number of ranks (local; after a sum)
  };
  Kind kind = Kind::copy;
  int peer = -1;
  uint32_t tag_step = 0;  ///< with tag_chunk: the frame's match key within the operation
  uint32_t tag_chunk = 0;
  std::byte* dst = nullptr;
  const std::byte* src = nullptr;
  size_t bytes = 0;
  uint64_t offset = 0;         ///< byte offset within the operation's buffer, for frame headers
  uint32_t waits = 0;          ///< steps that must complete before this one starts
  std::vector<uint32_t> then;  ///< steps that wait for this one
};

class Schedule {
 public:
  using Id = uint32_t;
  static constexpr Id kNone = UINT32_MAX;

  Id add(Step step) {
    steps_.push_back(std::move(step));
    return static_cast<Id>(steps_.size() - 1);
  }
  // One constructor per kind: `step`/`chunk` form the frame's match key within the operation,
  // `offset` is the payload's byte offset within the operation's buffer.
  Id send(int peer, uint32_t step, uint32_t chunk, const std::byte* src, size_t bytes,
          uint64_t offset) {
    return add({Step::Kind::send, peer, step, chunk, nullptr, src, bytes, offset, 0, {}});
  }
  Id recv(int peer, uint32_t step, uint32_t chunk, std::byte* dst, size_t bytes, uint64_t offset) {
    return add({Step::Kind::recv, peer, step, chunk, dst, nullptr, bytes, offset, 0, {}});
  }
  Id recv_reduce(int peer, uint32_t step, uint32_t chunk, std::byte* dst, const std::byte* src,
                 size_t bytes, uint64_t offset) {
    return add({Step::Kind::recv_reduce, peer, step, chunk, dst, src, bytes, offset, 0, {}});
  }
  Id copy(std::byte* dst, const std::byte* src, size_t bytes) {
    return add({Step::Kind::copy, -1, 0, 0, dst, src, bytes, 0, 0, {}});
  }
  Id average(std::byte* dst, size_t bytes) {
    return add({Step::Kind::average, -1, 0, 0, dst, nullptr, bytes, 0, 0, {}});
  }
  /// A step that does nothing (a zero-byte copy): one point to order many steps before or after.
  Id join() { return copy(nullptr, nullptr, 0); }
  /// `after` starts only once `before` completed. kNone on either side is ignored.
  void order(Id before, Id after) {
    if (before == kNone || after == kNone) return;
    steps_[before].then.push_back(after);
    ++steps_[after].waits;
  }
  /// Moves `sub`, a schedule built for virtual ranks 0..k-1 of a sub-group, into this one: its
  /// peers become peer_of_virtual_rank[peer], its step tags grow by `tag_offset` (callers pick
  /// offsets so that no two appended schedules share a tag between the same two ranks), its
  /// dependencies keep their meaning and its scratch blocks live on here. Its first steps wait
  /// for `after` (kNone: nothing); returns a join step that completes once all of its steps did.
  Id append(Schedule&& sub, const std::vector<int>& peer_of_virtual_rank, uint32_t tag_offset,
            Id after);
  std::vector<Step>& steps() { return steps_; }
  const std::vector<Step>& steps() const { return steps_; }
  /// Memory the schedule needs besides the user's buffers (partial sums, staging); each call
  /// returns a new block that lives as long as the schedule.
  std::byte* scratch(size_t bytes) {
    scratch_.push_back(std::make_unique<std::byte[]>(bytes == 0 ? 1 : bytes));
    return scratch_.back().get();
  }

 private:
  std::vector<Step> steps_;
  std::vector<std::unique_ptr<std::byte[]>> scratch_;
};

}  // namespace hcomm::collectives
