// In-memory links for testing the reliable channel (failover/) deterministically, on one thread:
// - ManualScheduler: a failover::Scheduler whose clock moves only when the test says, and whose
//   tasks and timers run only in run_ready();
// - FakeLink: a transport::Link that keeps what is sent in an outbox until the test moves it,
//   and receives what the test hands it like a medium does (should_drop, posted receive or the
//   unexpected store, pieces), a frame whole or only its first bytes; it fails when told;
// - FakeNet and FakeProtocol: the two slots' protocols of a pair of ranks (0 and 1), which make
//   FakeLinks, pair the two ends of a slot, and move frames between them (all, some, none).
// Header-only, for tests/unit/reliable_link_test.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "failover/scheduler.hpp"
#include "transport/link.hpp"
#include "transport/link_protocol.hpp"
#include "transport/unexpected_frames.hpp"

namespace hcomm::fake {

using transport::FrameHeader;
using transport::FrameKind;

class ManualScheduler final : public failover::Scheduler {
 public:
  Clock::time_point now() const override { return now_; }
  void post(Task task) override { tasks_.push_back(std::move(task)); }
  TimerId add_timer(Clock::time_point when, Task task) override {
    const TimerId id = next_id_++;
    timers_.emplace(id, std::make_pair(when, std::move(task)));
    return id;
  }
  void cancel_timer(TimerId id) override { timers_.erase(id); }

  /// Runs the posted tasks and the timers that are due, in order, until none is left; true when
  /// anything ran.
  bool run_ready() {
    bool ran = false;
    for (;;) {
      if (!tasks_.empty()) {
        Task t = std::move(tasks_.front());
        tasks_.pop_front();
        t();
        ran = true;
        continue;
      }
      auto due = timers_.end();
      for (auto it = timers_.begin(); it != timers_.end(); ++it)
        if (it->second.first <= now_ &&
            (due == timers_.end() || it->second.first < due->second.first))
          due = it;
      if (due == timers_.end()) return ran;
      Task t = std::move(due->second.second);
      timers_.erase(due);
      t();
      ran = true;
    }
  }
  void set_now(Clock::time_point t) { now_ = t; }

 private:
  // Not the epoch: a ReliableLink takes time_point{} for "never".
  Clock::time_point now_ = Clock::time_point{} + std::chrono::hours(1);
  std::deque<Task> tasks_;
  std::map<TimerId, std::pair<Clock::time_point, Task>> timers_;
  TimerId next_id_ = 1;
};

/// A frame as it travels: header, payload bytes, and the send request that queued it (null for
/// the link's own frames, and once completed).
struct WireFrame {
  FrameHeader header;
  std::vector<std::byte> payload;
  transport::SendRequest* request = nullptr;

  FrameKind kind() const { return static_cast<FrameKind>(header.kind); }
  std::string text() const {
    return std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
  }
};

class FakeNet;

class FakeLink final : public transport::Link {
 public:
  FakeLink(int peer, transport::LinkObserver& observer, std::string name, FakeNet* net = nullptr,
           int slot = -1, int rank = -1)
      : peer_(peer),
        observer_(observer),
        name_(std::move(name)),
        net_(net),
        slot_(slot),
        rank_(rank) {}
  ~FakeLink() override;

  // ---- transport::Link
  int peer() const override { return peer_; }
  bool is_up() const override { return error_.ok() && !closing_; }
  const std::string& describe() const override { return name_; }
  transport::LinkCaps caps() const override {
    transport::LinkCaps c;
    c.medium = "fake";
    c.max_frame_bytes = SIZE_MAX;
    return c;
  }
  void post_send(transport::SendRequest* r) override {
    if (!error_.ok()) return r->on_sent(error_);
    const auto* p = static_cast<const std::byte*>(r->payload);
    outbox_.push_back({r->header, std::vector<std::byte>(p, p + r->header.length), r});
    // A write error: everything queued fails, this send too, from inside the call.
    if (sends_before_failure >= 0 && sends_before_failure-- == 0)
      fail({HCOMM_ERR_TRANSPORT, name_ + ": failed while sending"});
  }
  /// A frame stored before the link failed is still handed over (after the peer's goodbye).
  void post_recv(transport::RecvRequest* r) override {
    if (stored_.deliver_stored(r)) return;
    if (!error_.ok()) return r->on_received(error_);
    posted_.push_back(r);
  }
  bool cancel_recv(transport::RecvRequest* r) override {
    auto it = std::find(posted_.begin(), posted_.end(), r);
    if (it == posted_.end()) return false;
    posted_.erase(it);
    return true;
  }
  void close() override {
    if (closing_ || !error_.ok()) return;
    FrameHeader h;
    h.kind = static_cast<uint8_t>(FrameKind::close);
    outbox_.push_back({h, {}, nullptr});
    closing_ = true;
  }
  void abandon() override { fail({HCOMM_ERR_ABORTED, name_ + " was abandoned"}, false, false); }
  const Status& error() const override { return error_; }
  std::vector<std::pair<FrameHeader, transport::Payload>> take_stored() override {
    return stored_.take_all();
  }
  transport::MediumCounters medium_counters() const override { return counters; }

  // ---- the test's side

  /// What was sent and not yet moved, oldest first.
  std::deque<WireFrame>& outbox() { return outbox_; }
  /// Takes the oldest frame out of the outbox; its send completes (the medium has the bytes).
  WireFrame take() {
    WireFrame f = std::move(outbox_.front());
    outbox_.pop_front();
    if (auto* r = std::exchange(f.request, nullptr)) r->on_sent(Status{});
    return f;
  }
  /// Frame `f` arrives from the peer, as on a medium. `max_bytes` < its length: only that much
  /// of the payload arrives, and the receive it matched stays in progress (until the link fails).
  void arrive(const WireFrame& f, size_t max_bytes = SIZE_MAX) {
    if (!error_.ok()) return;  // a dead medium reads nothing
    const FrameHeader& h = f.header;
    switch (f.kind()) {
      case FrameKind::abort:
        return observer_.on_remote_abort(peer_, h.comm_id, h.op_seq, f.text());
      case FrameKind::channel:
        return observer_.on_channel_frame(peer_, h, f.text());
      case FrameKind::close:
        return fail({HCOMM_ERR_PEER_LOST, name_ + ": the peer closed"}, true, true);
      case FrameKind::data:
        break;
    }
    if (observer_.should_drop(h)) return;
    const transport::MatchKey key = transport::MatchKey::of(h);
    auto it = std::find_if(posted_.begin(), posted_.end(),
                           [&](transport::RecvRequest* r) { return r->key == key; });
    if (it == posted_.end()) {
      transport::Payload p(f.payload.begin(), f.payload.end());
      stored_.store(h, std::move(p));
      observer_.on_frame_stored(peer_, h);
      return;
    }
    transport::RecvRequest* r = *it;
    posted_.erase(it);
    Status st = r->accept(h);
    if (!st.ok()) return r->on_received(st);
    const size_t whole = f.payload.size();
    const size_t bytes = std::min(whole, max_bytes);
    if (void* dst = r->destination()) {
      if (bytes > 0) std::memcpy(dst, f.payload.data(), bytes);
    } else {
      const size_t g = std::max<size_t>(1, r->piece_granularity());
      const size_t piece = std::max(g, piece_bytes / g * g);
      for (size_t off = 0; off < bytes; off += piece) {
        const size_t n = std::min(piece, bytes - off);
        r->on_piece(off, f.payload.data() + off, n);
      }
    }
    if (bytes < whole) {
      receiving_ = r;
      return;
    }
    r->on_received(Status{});
  }
  /// The link fails: queued sends and posted (or half-received) receives fail with `status`,
  /// then the observer is told (unless `notify` is false, as for abandon()).
  void fail(const Status& status, bool graceful = false, bool notify = true) {
    if (!error_.ok()) return;
    error_ = status;
    auto queued = std::move(outbox_);
    outbox_.clear();
    for (auto& f : queued)
      if (f.request != nullptr) f.request->on_sent(graceful ? Status{} : status);
    auto posted = std::move(posted_);
    posted_.clear();
    if (receiving_ != nullptr) posted.insert(posted.begin(), std::exchange(receiving_, nullptr));
    for (auto* r : posted) r->on_received(status);
    if (notify && !closing_) observer_.on_link_failed(peer_, status, graceful);
  }

  size_t posted() const { return posted_.size(); }
  int slot() const { return slot_; }
  int rank() const { return rank_; }
  uint32_t generation = 0;
  /// >= 0: the link fails inside the post_send() after this many more.
  int sends_before_failure = -1;
  /// The piece size for receives without a destination (rounded to their granularity).
  size_t piece_bytes = 1024;
  /// What medium_counters() reports: the test moves them on (link health).
  transport::MediumCounters counters;

 private:
  /// Abort and channel frames (Link::send_abort, send_channel) queue behind the data.
  void send_control(const FrameHeader& header, std::string payload) override {
    if (!is_up()) return;
    const auto* p = reinterpret_cast<const std::byte*>(payload.data());
    outbox_.push_back({header, std::vector<std::byte>(p, p + payload.size()), nullptr});
  }

  const int peer_;
  transport::LinkObserver& observer_;
  const std::string name_;
  FakeNet* net_;
  const int slot_;
  const int rank_;
  Status error_;
  bool closing_ = false;
  std::deque<WireFrame> outbox_;
  std::vector<transport::RecvRequest*> posted_;
  transport::RecvRequest* receiving_ = nullptr;
  transport::UnexpectedFrames stored_;
};

/// One slot's protocol for both ranks: its links are registered with the FakeNet.
class FakeProtocol final : public transport::LinkProtocol {
 public:
  FakeProtocol(FakeNet& net, int slot) : net_(net), slot_(slot) {}
  ProtocolCaps caps() const override { return {}; }
  Expected<std::string> open(const ProtocolContext&) override { return std::string(); }
  bool reaches(int, const std::string&, const std::string&) const override { return true; }
  std::unique_ptr<transport::Link> create_link(const transport::LinkContext& ctx,
                                               transport::ProgressEngine::Clock::time_point,
                                               UpCallback on_up) override;
  bool can_redial() const override { return redials; }

  bool redials = true;
  int made = 0;

 private:
  FakeNet& net_;
  const int slot_;
};

/// Two ranks (0 and 1) and their two slots' links. A slot's two ends are paired when both exist
/// and were made for the same generation; frames then move between them when the test says
/// (deliver) or, unless held, whenever the net is pumped.
class FakeNet {
 public:
  FakeNet() : protocols_{FakeProtocol(*this, 0), FakeProtocol(*this, 1)} {}

  FakeProtocol& protocol(int slot) { return protocols_[static_cast<size_t>(slot)]; }
  /// Rank `rank`'s current link of `slot` (null when none).
  FakeLink* link(int slot, int rank) { return ends_[index(slot, rank)]; }
  bool paired(int slot) {
    FakeLink* a = link(slot, 0);
    FakeLink* b = link(slot, 1);
    return a != nullptr && b != nullptr && a->generation == b->generation;
  }
  /// Frames from `rank` on `slot` stay in its outbox until delivered one by one.
  void hold(int slot, int rank, bool held = true) { held_[index(slot, rank)] = held; }
  using Which = std::function<bool(const WireFrame&)>;

  /// Takes the oldest frame that `which` selects (any, if none given; the others keep their
  /// place) out of `rank`'s outbox of `slot`, its send completed: a frame on its way. False when
  /// there is none.
  bool take(int slot, int rank, WireFrame& out, const Which& which = {}) {
    FakeLink* from = link(slot, rank);
    if (from == nullptr) return false;
    auto& box = from->outbox();
    auto it = which ? std::find_if(box.begin(), box.end(), which) : box.begin();
    if (it == box.end()) return false;
    if (it != box.begin()) std::rotate(box.begin(), it, it + 1);  // to the front
    out = from->take();
    return true;
  }
  /// Moves up to `n` frames (those `which` selects) from `rank`'s end of `slot` to the other
  /// end, once both are paired; returns how many moved.
  size_t deliver(int slot, int rank, size_t n = SIZE_MAX, const Which& which = {}) {
    size_t moved = 0;
    WireFrame f;
    while (moved < n && paired(slot) && take(slot, rank, f, which)) {
      ++moved;
      ++carried_[index(slot, rank)][static_cast<size_t>(f.kind())];
      link(slot, 1 - rank)->arrive(f);
    }
    return moved;
  }
  /// Data frames moved from `rank` on `slot` so far.
  size_t data_carried(int slot, int rank) const {
    return carried_[index(slot, rank)][static_cast<size_t>(FrameKind::data)];
  }
  /// Both ends of `slot` fail (rank 0's first).
  void fail(int slot, const std::string& why = "cut") {
    for (int r = 0; r < 2; ++r)
      if (FakeLink* l = link(slot, r)) l->fail({HCOMM_ERR_TRANSPORT, why});
  }
  /// Moves every frame that is not held, both ways on both slots, once; true when any moved.
  bool deliver_unheld() {
    bool any = false;
    for (int s = 0; s < 2; ++s)
      for (int r = 0; r < 2; ++r)
        if (!held_[index(s, r)]) any |= deliver(s, r) > 0;
    return any;
  }

  void add(FakeLink* l) { ends_[index(l->slot(), l->rank())] = l; }
  void remove(FakeLink* l) {
    FakeLink*& e = ends_[index(l->slot(), l->rank())];
    if (e == l) e = nullptr;
  }

 private:
  static size_t index(int slot, int rank) { return static_cast<size_t>(slot * 2 + rank); }
  std::array<FakeProtocol, 2> protocols_;
  std::array<FakeLink*, 4> ends_{};
  std::array<bool, 4> held_{};
  std::array<std::array<size_t, 5>, 4> carried_{};
};

inline FakeLink::~FakeLink() {
  if (net_ != nullptr) net_->remove(this);
}

inline std::unique_ptr<transport::Link> FakeProtocol::create_link(
    const transport::LinkContext& ctx, transport::ProgressEngine::Clock::time_point,
    UpCallback on_up) {
  ++made;
  auto link =
      std::make_unique<FakeLink>(ctx.peer, *ctx.observer,
                                 "fake" + std::to_string(slot_) + " rank " +
                                     std::to_string(ctx.my_rank) + " #" + std::to_string(made),
                                 &net_, slot_, ctx.my_rank);
  link->generation = ctx.generation;
  net_.add(link.get());
  on_up(Status{});
  return link;
}

}  // namespace hcomm::fake
