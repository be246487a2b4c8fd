#include "collectives/staged_allreduce.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "collectives/reduce_kernels.hpp"
#include "core/futex.hpp"
#include "transport/shm/cell_copy.hpp"
#include "transport/shm/link_segment.hpp"

namespace hcomm::collectives {
namespace {

using transport::shm::BoardWait;
using transport::shm::SlotBoard;
using transport::shm::stage_reached;
using transport::shm::stage_tag;
using transport::shm::StageFlags;

constexpr size_t kLineBytes = 64;
/// The reduction goes block by block, each copied into the staging ring while the cache still
/// holds it (a second pass over the part would read it back from farther away).
constexpr size_t kReduceBlockBytes = 8192;
/// Steps of one operation must fit the low half of a stage tag.
constexpr uint64_t kMaxSteps = UINT32_MAX - 1;

size_t part_bytes_for(const SlotBoard& board, size_t bytes) {
  // Small buffers: one step of equal parts, rounded to whole lines (every element size divides
  // a line, so parts hold whole elements).
  const size_t n = static_cast<size_t>(board.size());
  const size_t even = ((bytes + n - 1) / n + kLineBytes - 1) / kLineBytes * kLineBytes;
  return std::min(board.stage_part_bytes(), even);
}

}  // namespace

uint64_t stage_position(uint64_t base, uint64_t step_bytes, uint64_t step, uint64_t ring_bytes) {
  if (base % ring_bytes + step_bytes > ring_bytes) base = (base / ring_bytes + 1) * ring_bytes;
  const uint64_t first_lap = (ring_bytes - base % ring_bytes) / step_bytes;
  if (step < first_lap) return base + step * step_bytes;
  const uint64_t per_lap = ring_bytes / step_bytes;
  const uint64_t rest = step - first_lap;
  return (base / ring_bytes + 1 + rest / per_lap) * ring_bytes + rest % per_lap * step_bytes;
}

StagedAllreduce::StagedAllreduce(const SlotBoard& board, int rank)
    : board_(board), rank_(rank), size_(board.size()), base_(static_cast<size_t>(size_)) {}

bool StagedAllreduce::handles(const SlotBoard& board, const Operation& op) {
  if (op.kind != OpKind::allreduce || !board.staged()) return false;
  const size_t bytes = op.count * dtype_size(op.dtype);
  if (bytes <= SlotBoard::kSlotBytes) return false;  // the slots do those
  const size_t step = part_bytes_for(board, bytes) * static_cast<size_t>(board.size());
  return (bytes + step - 1) / step <= kMaxSteps;
}

void StagedAllreduce::begin(const Operation& op, uint64_t seq) {
  op_ = &op;
  seq_ = seq;
  bytes_ = op.count * dtype_size(op.dtype);
  part_bytes_ = part_bytes_for(board_, bytes_);
  step_bytes_ = part_bytes_ * static_cast<size_t>(size_);
  steps_ = (bytes_ + step_bytes_ - 1) / step_bytes_;
  // An operation that fits in the ring stages every step before reducing any, so no rank waits
  // for a contribution; a larger one reduces first: running ahead of the reduction would push
  // its data out of cache (README, "Shared memory within a host").
  contribute_first_ = steps_ * step_bytes_ <= SlotBoard::kStageBytes;
  contributed_ = reduced_ = consumed_ = 0;
  bases_known_ = false;
  base_[static_cast<size_t>(rank_)] = cursor_;
  cursor_ = position(cursor_, steps_ - 1) + step_bytes_;
  // Read by the others only after this operation's first `contributed`, which comes later.
  board_.stage_flags(rank_).base.store(base_[static_cast<size_t>(rank_)],
                                       std::memory_order_relaxed);
}

std::byte* StagedAllreduce::staged_part(int rank, uint64_t step, int owner) const {
  return board_.stage_at(rank, position(base_[static_cast<size_t>(rank)], step)) +
         static_cast<size_t>(owner) * part_bytes_;
}

StagedAllreduce::Part StagedAllreduce::part(uint64_t step, int owner) const {
  const size_t offset =
      (step * static_cast<size_t>(size_) + static_cast<size_t>(owner)) * part_bytes_;
  if (offset >= bytes_) return {};
  return {offset, std::min(part_bytes_, bytes_ - offset)};
}

bool StagedAllreduce::others_reached(std::atomic<uint64_t> StageFlags::*flag, uint64_t target,
                                     BoardWait* wait, Status* failure) const {
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    StageFlags& f = board_.stage_flags(q);
    // The bell first: a change after this read wakes a sleeper even if the flag read missed it.
    const uint32_t bell = f.bell.load(std::memory_order_acquire);
    const uint64_t value = (f.*flag).load(std::memory_order_acquire);
    if (f.abandoned.load(std::memory_order_acquire) == seq_) {
      *failure = {HCOMM_ERR_ABORTED, "rank " + std::to_string(q) + " gave up allreduce #" +
                                         std::to_string(op_->seq) + " (its own error says why)"};
      return false;
    }
    if (!stage_reached(value, target)) {
      if (wait->rank < 0) *wait = {&f.bell, &f.waiters, bell, q};
      return false;
    }
  }
  return true;
}

void StagedAllreduce::publish(std::atomic<uint64_t>& flag, uint64_t value) {
  StageFlags& mine = board_.stage_flags(rank_);
  flag.store(value, std::memory_order_release);
  mine.bell.fetch_add(1);  // seq_cst: ordered before the waiters check
  if (mine.waiters.load() != 0) core::futex_wake(&mine.bell, INT_MAX, core::FutexScope::shared);
}

void StagedAllreduce::stage(std::byte* dst, const std::byte* src, size_t bytes) {
  constexpr size_t kCell = transport::shm::LinkSegment::kCellBytes;
  for (size_t done = 0; done < bytes; done += kCell) {
    const size_t n = std::min(kCell, bytes - done);
    writer_.write(dst + done, src + done, n, n == kCell);
  }
}

StagedAllreduce::Progress StagedAllreduce::advance(BoardWait* wait, Status* failure, int budget) {
  StageFlags& mine = board_.stage_flags(rank_);
  for (bool moved = true; moved; moved = moved && --budget > 0) {
    moved = false;
    if (contribute_first_ && try_contribute(wait, failure)) {
      moved = true;
      continue;
    }
    if (!failure->ok()) return Progress::over;
    // Most urgent first: a reduced part is what the others' copies wait for, a consumed step
    // frees ring space, and contributions may run ahead while those wait.
    if (reduced_ < contributed_) {
      if (others_reached(&StageFlags::contributed, stage_tag(seq_, reduced_ + 1), wait, failure)) {
        if (!bases_known_) {
          // Written before the `contributed` just seen; the next operation's waits for this one.
          for (int q = 0; q < size_; ++q)
            if (q != rank_)
              base_[static_cast<size_t>(q)] =
                  board_.stage_flags(q).base.load(std::memory_order_relaxed);
          bases_known_ = true;
        }
        reduce_own(reduced_);
        publish(mine.reduced, stage_tag(seq_, ++reduced_));
        moved = true;
        continue;
      }
      if (!failure->ok()) return Progress::over;
    }
    if (consumed_ < reduced_) {
      if (others_reached(&StageFlags::reduced, stage_tag(seq_, consumed_ + 1), wait, failure)) {
        consume(consumed_);
        publish(mine.consumed, stage_tag(seq_, ++consumed_));
        moved = true;
        continue;
      }
      if (!failure->ok()) return Progress::over;
    }
    if (!contribute_first_ && try_contribute(wait, failure)) moved = true;
    if (!failure->ok()) return Progress::over;
  }
  if (consumed_ < steps_) return budget > 0 ? Progress::waiting : Progress::more;
  op_ = nullptr;
  return Progress::over;
}

bool StagedAllreduce::try_contribute(BoardWait* wait, Status* failure) {
  if (contributed_ == steps_ || !ring_free_for(contributed_, wait, failure)) return false;
  contribute(contributed_);
  held_.push_back({position(base_[static_cast<size_t>(rank_)], contributed_),
                   stage_tag(seq_, contributed_ + 1)});
  publish(board_.stage_flags(rank_).contributed, stage_tag(seq_, ++contributed_));
  return true;
}

bool StagedAllreduce::ring_free_for(uint64_t step, BoardWait* wait, Status* failure) {
  // The step's bytes held an earlier step one lap (kStageBytes) back: every step that began
  // before the step's end, one lap back, must have been consumed by every other rank.
  const uint64_t end = position(base_[static_cast<size_t>(rank_)], step) + step_bytes_;
  while (!held_.empty() && held_.front().position + SlotBoard::kStageBytes < end) {
    if (!others_reached(&StageFlags::consumed, held_.front().tag, wait, failure)) return false;
    held_.pop_front();
  }
  return true;
}

void StagedAllreduce::contribute(uint64_t step) {
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    const Part p = part(step, q);
    if (p.bytes > 0) stage(staged_part(rank_, step, q), op_->send + p.offset, p.bytes);
  }
}

void StagedAllreduce::reduce_own(uint64_t step) {
  const Part p = part(step, rank_);
  if (p.bytes == 0) return;
  const size_t es = dtype_size(op_->dtype);
  std::byte* staged = staged_part(rank_, step, rank_);
  for (size_t done = 0; done < p.bytes; done += kReduceBlockBytes) {
    const size_t bytes = std::min(kReduceBlockBytes, p.bytes - done);
    const size_t count = bytes / es;
    std::byte* out = op_->recv + p.offset + done;
    // This rank's input first, then the others in rank order: out may be the input itself (an
    // in-place allreduce), and every rank copies the bits computed here.
    bool first = true;
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      const std::byte* theirs = staged_part(q, step, rank_) + done;
      reduce(out, first ? op_->send + p.offset + done : out, theirs, count, op_->dtype, op_->redop);
      first = false;
    }
    if (op_->redop == ReduceOp::avg) finalize_average(out, count, op_->dtype, size_);
    stage(staged + done, out, bytes);
  }
}

void StagedAllreduce::consume(uint64_t step) {
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    const Part p = part(step, q);
    if (p.bytes > 0)
      transport::shm::cell_copy(op_->recv + p.offset, staged_part(q, step, q), p.bytes);
  }
}

void StagedAllreduce::abandon(uint64_t seq) {
  StageFlags& mine = board_.stage_flags(rank_);
  mine.abandoned.store(seq);
  // Nothing of this operation will be read here any more: the others may reuse their rings.
  const uint64_t past = stage_tag(seq, UINT32_MAX);
  if (stage_reached(past, mine.consumed.load(std::memory_order_relaxed)))
    publish(mine.consumed, past);
  if (op_ != nullptr && seq_ == seq) op_ = nullptr;
}

}  // namespace hcomm::collectives
