#include "collectives/slot_collectives.hpp"

#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "collectives/reduce_kernels.hpp"
#include "core/futex.hpp"

namespace hcomm::collectives {
namespace {

using transport::shm::SlotBoard;
using transport::shm::SlotHeader;

constexpr auto kMaxSleep = std::chrono::milliseconds(10);
// A staged allreduce moves at most this many parts per look (2 MiB on 2 ranks), so that a poll
// of the engine thread, which serves every link, stays short.
constexpr int kStagedMovesPerLook = 8;

bool contributes(const Operation& op, int rank) {
  switch (op.kind) {
    case OpKind::broadcast:
      return rank == op.root;
    case OpKind::barrier:
      return false;
    default:
      return true;
  }
}

/// Whose slots `rank` reads.
bool reads_from(const Operation& op, int rank, int q) {
  switch (op.kind) {
    case OpKind::broadcast:
      return q == op.root && rank != op.root;
    case OpKind::reduce:
      return rank == op.root;
    default:
      return true;  // allreduce, allgather, barrier
  }
}

size_t contribution_bytes(const Operation& op) {
  return op.kind == OpKind::barrier ? 0 : op.count * dtype_size(op.dtype);
}

bool reached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}

}  // namespace

SlotCollectives::SlotCollectives(SlotBoard board, int rank, std::chrono::microseconds spin)
    : board_(std::move(board)),
      rank_(rank),
      staged_(board_, rank),
      spin_(spin),
      done_seen_(static_cast<size_t>(board_.size())) {}

SlotCollectives::~SlotCollectives() {
  // Tell the others, and wake whoever sleeps on this rank's words, so that they fail at once
  // instead of waiting for their deadline.
  auto& mine = board_.progress(rank_);
  mine.closed.store(1);
  core::futex_wake(&mine.done, INT_MAX, core::FutexScope::shared);
  for (uint32_t d = 0; d < SlotBoard::kDepth; ++d)
    core::futex_wake(&board_.slot(rank_, d).seq, INT_MAX, core::FutexScope::shared);
  Finished finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& p : pending_)
      finished.emplace_back(std::move(p.op),
                            Status{HCOMM_ERR_ABORTED, "the communicator was destroyed"});
    pending_.clear();
  }
  complete(finished);
}

bool SlotCollectives::handles(const Operation& op) const {
  switch (op.kind) {
    case OpKind::allreduce:
    case OpKind::reduce:
    case OpKind::broadcast:
    case OpKind::allgather:
    case OpKind::barrier:
      return contribution_bytes(op) <= SlotBoard::kSlotBytes || stages(op);
    default:
      return false;
  }
}

void SlotCollectives::start(OperationPtr op, std::chrono::milliseconds timeout,
                            Finished* finished) {
  std::lock_guard<std::mutex> lock(mutex_);
  Pending& p = pending_.emplace_back();
  p.op = std::move(op);
  p.seq = ++next_;
  p.timeout = timeout;
  pending_count_.fetch_add(1);
  Blocker b;
  progress(&b, finished);
}

void SlotCollectives::abort(const std::string& reason) {
  board_.post_abort(rank_, reason);
  // Whoever sleeps on this rank's words looks again now, and fails.
  auto& mine = board_.progress(rank_);
  core::futex_wake(&mine.done, INT_MAX, core::FutexScope::shared);
  for (uint32_t d = 0; d < SlotBoard::kDepth; ++d)
    core::futex_wake(&board_.slot(rank_, d).seq, INT_MAX, core::FutexScope::shared);
  Finished finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Blocker b;
    progress(&b, &finished);  // every pending operation fails at the front, in order
  }
  complete(finished);
}

Status SlotCollectives::abort_status() const {
  auto notice = board_.abort_notice();
  if (!notice) return {};
  if (notice->first == rank_)
    return {HCOMM_ERR_ABORTED, "the communicator was aborted: " + notice->second};
  return {HCOMM_ERR_ABORTED,
          "rank " + std::to_string(notice->first) + " aborted the communicator: " + notice->second};
}

void SlotCollectives::complete(Finished& finished) {
  // Outside the lock: a completion callback may start the next operation.
  for (auto& [op, status] : finished) op->completion->complete(std::move(status));
  finished.clear();
}

bool SlotCollectives::progress(Blocker* b, Finished* finished) {
  bool worked = false;
  for (bool moved = true; moved;) {
    moved = false;
    while (!pending_.empty() && try_complete(pending_.front(), b, finished)) {
      pending_.pop_front();
      pending_count_.fetch_sub(1);
      moved = true;
    }
    for (auto& p : pending_) {
      if (p.published) continue;
      if (!try_publish(p, b)) break;
      moved = true;
    }
    worked |= moved || std::exchange(staged_moved_, false);
  }
  return worked;
}

bool SlotCollectives::try_publish(Pending& p, Blocker* b) {
  // After an abort nothing is published: the operation fails at the front (try_complete).
  if (!abort_status().ok()) return false;
  // The slot last held operation seq - kDepth: every reader must be done with it, this rank
  // included (it reads its own part back when it completes that operation).
  if (p.seq > SlotBoard::kDepth) {
    if (pending_.front().seq <= p.seq - SlotBoard::kDepth) return false;  // not completed here
    const uint32_t target = static_cast<uint32_t>(p.seq - SlotBoard::kDepth);
    for (int q = 0; q < board_.size(); ++q) {
      // What was seen last often suffices: each look at a peer's word takes its cache line.
      uint32_t& seen = done_seen_[static_cast<size_t>(q)];
      if (q == rank_ || reached(seen, target)) continue;
      auto& prog = board_.progress(q);
      seen = prog.done.load(std::memory_order_acquire);
      if (!reached(seen, target)) {
        if (b->word == nullptr) *b = {&prog.done, &prog.waiters, seen, q};
        return false;
      }
    }
  }
  const Operation& op = *p.op;
  SlotHeader& mine = board_.slot(rank_, p.seq);
  mine.op_kind = static_cast<uint8_t>(op.kind);
  mine.dtype = static_cast<uint8_t>(op.dtype);
  mine.redop = static_cast<uint8_t>(op.redop);
  mine.root = op.root;
  mine.op_seq = op.seq;
  mine.bytes = contribution_bytes(op);
  mine.rejected = op.invalid.ok() ? 0 : 1;
  mine.data_bytes = 0;
  if (!op.invalid.ok()) {
    const std::string& why = op.invalid.message();
    mine.data_bytes = std::min(why.size(), SlotBoard::kSlotBytes);
    std::memcpy(board_.slot_data(rank_, p.seq), why.data(), mine.data_bytes);
  } else if (contributes(op, rank_) && !stages(op)) {  // a staged one travels through staging
    const std::byte* src = op.kind == OpKind::broadcast ? op.recv : op.send;
    std::memcpy(board_.slot_data(rank_, p.seq), src, mine.bytes);
  }
  mine.seq.store(static_cast<uint32_t>(p.seq));  // seq_cst: ordered before the waiters check
  if (mine.waiters.load() != 0) core::futex_wake(&mine.seq, INT_MAX, core::FutexScope::shared);
  p.published = true;
  return true;
}

bool SlotCollectives::try_complete(Pending& p, Blocker* b, Finished* finished) {
  // After an abort every operation fails, published or not (a staged one says so to the others).
  const Status aborted = abort_status();
  Status status = aborted.ok() ? p.op->invalid : aborted;
  if (!p.published) {
    // Stuck behind a slow reader: only a deadline or a dead peer ends this (without writing the
    // slot, which a late reader may still be reading).
    if (aborted.ok()) {
      status = check_stuck(p, *b);
      if (status.ok()) return false;
    }
  } else if (!aborted.ok()) {
    if (stages(*p.op)) staged_.abandon(p.seq);
  } else if (status.ok()) {
    const Operation& op = *p.op;
    for (int q = 0; q < board_.size() && status.ok() && !p.staging; ++q) {
      if (q == rank_ || !reads_from(op, rank_, q)) continue;
      SlotHeader& h = board_.slot(q, p.seq);
      const uint32_t v = h.seq.load(std::memory_order_acquire);
      if (v != static_cast<uint32_t>(p.seq)) {
        *b = {&h.seq, &h.waiters, v, q};
        status = check_stuck(p, *b);
        if (status.ok()) return false;
      } else {
        status = check_peer(q, p.seq, op);
      }
    }
    if (status.ok() && !p.staging && stages(op)) {
      staged_.begin(op, p.seq);
      p.staging = true;
    }
    if (!status.ok()) {
      if (stages(op)) staged_.abandon(p.seq);  // others may have begun its exchange
    } else if (p.staging) {
      Blocker w;  // *b may hold what a later operation waits for
      switch (staged_.advance(&w, &status, kStagedMovesPerLook)) {
        case StagedAllreduce::Progress::over:
          break;
        case StagedAllreduce::Progress::more:
          staged_moved_ = true;
          return false;
        case StagedAllreduce::Progress::waiting:
          *b = w;
          status = check_stuck(p, *b);
          if (status.ok()) return false;
      }
      if (!status.ok()) staged_.abandon(p.seq);
    } else {
      compute(op, p.seq);
    }
  }
  // Done reading: the others may reuse their slots of this operation kDepth operations on.
  auto& done = board_.progress(rank_);
  done.done.store(static_cast<uint32_t>(p.seq));
  if (done.waiters.load() != 0) core::futex_wake(&done.done, INT_MAX, core::FutexScope::shared);
  finished->emplace_back(std::move(p.op), std::move(status));
  return true;
}

Status SlotCollectives::check_stuck(Pending& p, const Blocker& b) {
  // Clock reads are rationed: this runs on every look of a busy wait. No blocker yet: the
  // operation has not been tried (it is looked at again right after).
  if (b.rank < 0 || ++stuck_checks_ % 64 != 0) return {};
  const auto now = Clock::now();
  const Operation& op = *p.op;
  auto label = [&] { return std::string(op_kind_name(op.kind)) + " #" + std::to_string(op.seq); };
  if (board_.progress(b.rank).closed.load() != 0)
    return {HCOMM_ERR_PEER_LOST, "rank " + std::to_string(b.rank) +
                                     " has destroyed its communicator (during " + label() + ")"};
  // The deadline counts from the first look that found the operation stuck (at most a few
  // microseconds after it started): most finish before, and need no clock read for it.
  if (p.deadline == Clock::time_point{}) p.deadline = now + p.timeout;
  if (now >= p.deadline)
    return {HCOMM_ERR_TIMEOUT, label() + " waited in vain for rank " + std::to_string(b.rank) +
                                   ": does every rank call the same collectives in the same "
                                   "order?"};
  if (now >= next_liveness_) {
    next_liveness_ = now + transport::shm::ProcessIdentity::kCheckPeriod;
    const auto peer = board_.process(b.rank);
    if (peer.pid != 0 && !peer.alive())
      return {HCOMM_ERR_PEER_LOST, "rank " + std::to_string(b.rank) + " (pid " +
                                       std::to_string(peer.pid) + ", this host) exited during " +
                                       label()};
  }
  return {};
}

void SlotCollectives::drive(const core::Completion& c, Clock::time_point deadline) {
  drivers_.fetch_add(1);
  struct Leave {
    std::atomic<int>& drivers;
    ~Leave() { drivers.fetch_sub(1); }
  } leave{drivers_};
  Clock::time_point spin_until{};  // set on the first clock read: most waits end before
  Finished finished;
  for (unsigned looks = 1;; ++looks) {
    Blocker b;
    bool worked = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      worked = progress(&b, &finished);
    }
    complete(finished);
    if (c.done()) return;
    if (worked) {
      // A staged allreduce moves on (a look can copy megabytes): no spinning, no sleep, but
      // the deadline still holds.
      if (Clock::now() >= deadline) return;
      continue;
    }
    if (looks % 64 != 0) {
      _mm_pause();
      continue;
    }
    // On a busy host the rank this one waits for may need this very core: a yield costs little
    // when nobody does, and saves the whole spin budget when somebody does.
    std::this_thread::yield();
    const auto now = Clock::now();
    if (now >= deadline) return;
    if (spin_until == Clock::time_point{}) spin_until = now + spin_;
    if (now < spin_until || b.word == nullptr) continue;
    // Sleep until the rank this waits for writes the word (it wakes sleepers), briefly, so
    // deadlines and dead peers are still noticed.
    b.waiters->fetch_add(1);
    if (b.word->load() == b.seen)
      core::futex_wait(b.word, b.seen, std::min<Clock::duration>(deadline - now, kMaxSleep),
                       core::FutexScope::shared);
    b.waiters->fetch_sub(1);
  }
}

bool SlotCollectives::poll() {
  // A waiting thread drives them: the engine thread taking turns with it would only compete
  // for its core (and pull the staged exchange's cache lines to another one).
  if (pending_count_.load(std::memory_order_relaxed) == 0 ||
      drivers_.load(std::memory_order_relaxed) > 0)
    return false;
  Finished finished;
  bool worked = false;
  {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return false;  // a submitting thread is at it
    Blocker b;
    worked = progress(&b, &finished);
  }
  complete(finished);
  // Within an exchange the peers' next parts follow within microseconds, and nobody rings the
  // engine for them: stay hot for kHotAfterMove after a move rather than sleep a millisecond per
  // part (a late peer then costs this much polling, then 1 ms looks, max_sleep_ms()).
  const auto now = Clock::now();
  if (worked) last_move_ = now;
  return worked ||
         (pending_count_.load(std::memory_order_relaxed) > 0 && now - last_move_ < kHotAfterMove);
}

Status SlotCollectives::check_peer(int q, uint64_t seq, const Operation& op) const {
  const SlotHeader& h = board_.slot(q, seq);
  const bool rooted = op.kind == OpKind::broadcast || op.kind == OpKind::reduce;
  const bool reduces = op.kind == OpKind::allreduce || op.kind == OpKind::reduce;
  if (h.op_seq == op.seq && h.op_kind == static_cast<uint8_t>(op.kind) && h.rejected == 0 &&
      h.dtype == static_cast<uint8_t>(op.dtype) && h.bytes == contribution_bytes(op) &&
      (!reduces || h.redop == static_cast<uint8_t>(op.redop)) && (!rooted || h.root == op.root))
    return {};  // the common case, before any message is built
  const std::string who = "rank " + std::to_string(q);
  const std::string me = "this rank (" + std::to_string(rank_) + ")";
  const std::string label = std::string(op_kind_name(op.kind)) + " #" + std::to_string(op.seq);
  if (h.op_seq != op.seq)
    return {HCOMM_ERR_INVALID_ARG,
            who + "'s slot operation is its collective #" + std::to_string(h.op_seq) +
                " where this rank's is #" + std::to_string(op.seq) +
                ": a collective of an earlier call ran on the slot board on one rank and over "
                "links on another (ranks passed different counts or types to it)"};
  if (h.op_kind != static_cast<uint8_t>(op.kind))
    return {HCOMM_ERR_INVALID_ARG,
            who + " called " + op_kind_name(static_cast<OpKind>(h.op_kind)) + " where " + me +
                " called " + op_kind_name(op.kind) +
                ": every rank must call the same collectives in the same order"};
  if (h.rejected != 0)
    return {HCOMM_ERR_INVALID_ARG,
            who + " failed " + label + ": " +
                std::string(reinterpret_cast<const char*>(board_.slot_data(q, seq)), h.data_bytes)};
  if (h.dtype != static_cast<uint8_t>(op.dtype))
    return {HCOMM_ERR_INVALID_ARG, who + " passed data type " +
                                       dtype_name(static_cast<DataType>(h.dtype)) + ", " + me +
                                       " " + dtype_name(op.dtype) + ", to " + label};
  if (h.bytes != contribution_bytes(op))
    return {HCOMM_ERR_INVALID_ARG, who + " passed " + std::to_string(h.bytes) + " bytes to " +
                                       label + ", " + me + " " +
                                       std::to_string(contribution_bytes(op)) +
                                       " bytes: every rank must pass the same count"};
  if ((op.kind == OpKind::allreduce || op.kind == OpKind::reduce) &&
      h.redop != static_cast<uint8_t>(op.redop))
    return {HCOMM_ERR_INVALID_ARG, who + " reduces with " +
                                       reduce_op_name(static_cast<ReduceOp>(h.redop)) + ", " + me +
                                       " with " + reduce_op_name(op.redop) + ", in " + label};
  if ((op.kind == OpKind::broadcast || op.kind == OpKind::reduce) && h.root != op.root)
    return {HCOMM_ERR_INVALID_ARG, who + " passed root " + std::to_string(h.root) + ", " + me +
                                       " root " + std::to_string(op.root) + ", to " + label};
  return {};
}

void SlotCollectives::compute(const Operation& op, uint64_t seq) const {
  const int n = board_.size();
  const size_t bytes = contribution_bytes(op);
  switch (op.kind) {
    case OpKind::allreduce:
    case OpKind::reduce: {
      if (op.kind == OpKind::reduce && rank_ != op.root) return;
      if (n == 1) {
        std::memcpy(op.recv, board_.slot_data(0, seq), bytes);
      } else {
        reduce(op.recv, board_.slot_data(0, seq), board_.slot_data(1, seq), op.count, op.dtype,
               op.redop);
        for (int q = 2; q < n; ++q)
          reduce(op.recv, op.recv, board_.slot_data(q, seq), op.count, op.dtype, op.redop);
      }
      if (op.redop == ReduceOp::avg) finalize_average(op.recv, op.count, op.dtype, n);
      return;
    }
    case OpKind::broadcast:
      if (rank_ != op.root) std::memcpy(op.recv, board_.slot_data(op.root, seq), bytes);
      return;
    case OpKind::allgather:
      for (int q = 0; q < n; ++q)
        std::memcpy(op.recv + static_cast<size_t>(q) * bytes, board_.slot_data(q, seq), bytes);
      return;
    default:
      return;
  }
}

}  // namespace hcomm::collectives
