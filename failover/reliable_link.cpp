#include "failover/reliable_link.hpp"

#include <algorithm>
#include <cstring>

#include "core/log.hpp"

namespace hcomm::failover {
namespace {

using transport::FrameHeader;
using transport::FrameKind;

/// Channel frames: FrameHeader::step says which; chunk names a slot; offset carries the
/// sender's cumulative acknowledgement (every channel frame acknowledges).
enum ChannelKind : uint32_t {
  kHeartbeat = 1,
  kAck = 2,            ///< payload: delivered ranges above the cumulative point
  kSwitch = 3,         ///< the sender moved its traffic to slot `chunk`
  kRedialRequest = 4,  ///< op_seq: attempt; payload: the sender's offer for slot `chunk`
  kRedialReply = 5,    ///< op_seq: attempt; payload: the replier's offer
};

/// Frames up to this size are copied when sent, so that their send completes at once. Not more:
/// a sender that runs ahead makes larger frames arrive before their receive is posted, and the
/// receiver's extra copy out of its unexpected store costs more than waiting for the
/// acknowledgement (measured on loopback TCP: 32 KiB allreduce 34 us staged, 21 us not).
constexpr size_t kStageMaxBytes = 16 * 1024;
/// ... as long as the copies of one peer stay under this.
constexpr size_t kStageBudget = size_t{16} << 20;
/// Deliveries acknowledged lazily (with the next heartbeat) at most; then at once.
constexpr uint32_t kLazyAcks = 64;
constexpr size_t kMaxAckRanges = 64;
constexpr size_t kSpareBuffers = 32;
/// Frames from the peer a reconnected link must carry before it counts as up.
constexpr uint32_t kProofFrames = 2;

}  // namespace

// ---- the pieces

/// The observer of one link instance: tags what it reports with its slot, and goes deaf once
/// the link is retired (a link may still call back while it is being destroyed).
class ReliableLink::Tap final : public transport::LinkObserver {
 public:
  Tap(ReliableLink& owner, int slot) : owner_(owner), slot_(slot) {}
  bool retired = false;

  void on_remote_abort(int peer, uint32_t comm_id, uint64_t op_seq,
                       const std::string& reason) override {
    if (retired) return;
    owner_.heard(slot_);
    owner_.observer_.on_remote_abort(peer, comm_id, op_seq, reason);
  }
  bool should_drop(const FrameHeader& header) override {
    if (retired) return true;
    owner_.heard(slot_);
    if (owner_.drop_duplicate(slot_, header)) return true;
    if (!owner_.observer_.should_drop(header)) return false;
    // Dropped here (its operation was aborted): it arrived all the same, and its sender waits
    // for the acknowledgement.
    owner_.on_delivered(header.link_seq, header.flags);
    return true;
  }
  void on_channel_frame(int, const FrameHeader& header, const std::string& payload) override {
    if (retired) return;
    owner_.heard(slot_);
    owner_.on_channel(slot_, header, payload);
  }
  void on_frame_stored(int, const FrameHeader& header) override {
    if (!retired) owner_.on_delivered(header.link_seq, header.flags);
  }
  void on_link_failed(int, const Status& status, bool graceful) override {
    if (retired) return;
    owner_.on_slot_failed(slot_, status, graceful);
  }

 private:
  ReliableLink& owner_;
  const int slot_;
};

/// A frame sent and not yet acknowledged.
struct ReliableLink::Entry {
  transport::SendRequest* user = nullptr;  // null once completed
  FrameHeader header;
  const void* payload = nullptr;
  const void* buffer = nullptr;
  size_t buffer_bytes = 0;
  std::vector<std::byte> staged;  // the copy, for frames sent eagerly
  SendProxy* proxy = nullptr;     // the attempt in flight, if any
  bool acked = false;
  bool sent_once = false;
};

/// One attempt at sending an Entry on one link.
struct ReliableLink::SendProxy final : transport::SendRequest {
  ReliableLink* owner = nullptr;
  Entry* entry = nullptr;  // null once the entry is gone
  int slot = kNoSlot;
  bool stale = false;  // its link was retired: callbacks are ignored, the grave frees it
  void on_sent(const Status& status) override {
    if (!stale) owner->on_proxy_sent(this, status);
  }
};

/// A receive posted by the executor.
struct ReliableLink::Pending {
  transport::RecvRequest* user = nullptr;
  RecvProxy* proxy = nullptr;  // its posting on the active link, if any
  size_t delivered = 0;        // payload bytes handed over in pieces so far (kept across links)
};

/// One posting of a Pending on one link.
struct ReliableLink::RecvProxy final : transport::RecvRequest {
  ReliableLink* owner = nullptr;
  Pending* pending = nullptr;  // null once the pending receive is gone
  int slot = kNoSlot;
  bool stale = false;
  bool rejected = false;
  uint64_t seq = 0;
  uint8_t flags = 0;

  Status accept(const FrameHeader& h) override {
    if (stale || pending == nullptr) return {HCOMM_ERR_ABORTED, "the link was left behind"};
    seq = h.link_seq;
    flags = h.flags;
    Status st = pending->user->accept(h);
    rejected = !st.ok();
    return st;
  }
  void* destination() override {
    return stale || pending == nullptr ? nullptr : pending->user->destination();
  }
  void on_piece(size_t offset, const void* data, size_t bytes) override {
    if (stale || pending == nullptr) return;
    // A frame sent again after a failover starts from its beginning: the bytes this receive
    // has already reduced are skipped (pieces end on element boundaries, so `delivered` does).
    size_t& done = pending->delivered;
    if (offset + bytes <= done) return;
    if (offset < done) {
      const size_t skip = done - offset;
      data = static_cast<const std::byte*>(data) + skip;
      bytes -= skip;
      offset = done;
    }
    pending->user->on_piece(offset, data, bytes);
    done = offset + bytes;
  }
  size_t piece_granularity() const override {
    return pending == nullptr ? 1 : pending->user->piece_granularity();
  }
  void on_received(const Status& status) override {
    if (!stale) owner->on_proxy_received(this, status);
  }
};

/// A retired link and the requests it may still call back, destroyed together (link first).
struct ReliableLink::Grave {
  std::unique_ptr<transport::Link> link;
  std::unique_ptr<Tap> tap;
  std::vector<SendProxy*> sends;
  std::vector<RecvProxy*> recvs;
  ~Grave() {
    link.reset();
    for (auto* p : sends) delete p;
    for (auto* p : recvs) delete p;
  }
};

// ---- life cycle

ReliableLink::Slot::Slot(const KeepaliveDetector& d) : detector(d) {}
ReliableLink::Slot::Slot(Slot&&) noexcept = default;
ReliableLink::Slot::~Slot() = default;

ReliableLink::ReliableLink(ReliableLinkParams params, transport::LinkObserver& observer,
                           ChannelListener& listener, FailoverRecorder& recorder)
    : params_(std::move(params)),
      engine_(*params_.context.engine),
      observer_(observer),
      listener_(listener),
      recorder_(recorder),
      coordinator_(params_.context.my_rank < params_.context.peer),
      slots_{Slot(KeepaliveDetector(params_.keepalive_interval, params_.keepalive_timeout,
                                    params_.phi_threshold)),
             Slot(KeepaliveDetector(params_.keepalive_interval, params_.keepalive_timeout,
                                    params_.phi_threshold))} {
  name_ = params_.slots[kPrimary].name + " " + params_.slots[kPrimary].peer_address + " (rank " +
          std::to_string(peer()) + ", fallback " + params_.slots[kFallback].name + " " +
          params_.slots[kFallback].peer_address + ")";
}

ReliableLink::~ReliableLink() {
  *alive_ = false;
  if (tick_timer_ != 0) engine_.cancel_timer(tick_timer_);
  if (deadline_timer_ != 0) engine_.cancel_timer(deadline_timer_);
  for (int s = 0; s < 2; ++s) {
    if (slots_[static_cast<size_t>(s)].attempt_timer != 0)
      engine_.cancel_timer(slots_[static_cast<size_t>(s)].attempt_timer);
    retire(s);
  }
  graves_.clear();
  // Requests still held are the executor's, which failed them already (fail_all()).
}

transport::LinkContext ReliableLink::context_for(int slot) {
  transport::LinkContext ctx = params_.context;
  ctx.observer = slots_[static_cast<size_t>(slot)].tap.get();
  return ctx;
}

transport::LinkObserver& ReliableLink::observer_for(int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (!s.tap) s.tap = std::make_unique<Tap>(*this, slot);
  return *s.tap;
}

void ReliableLink::adopt(int slot, std::unique_ptr<transport::Link> link) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  observer_for(slot);
  s.link = std::move(link);
  s.state = SlotState::connecting;
  ++s.epoch;
}

void ReliableLink::establish(Clock::time_point deadline, UpCallback on_up) {
  on_up_ = std::move(on_up);
  for (int s = 0; s < 2; ++s) {
    if (slots_[static_cast<size_t>(s)].link) {
      // Adopted: up already; reported like the others, from a task.
      const uint64_t epoch = slots_[static_cast<size_t>(s)].epoch;
      engine_.post([this, alive = std::weak_ptr<bool>(alive_), s, epoch] {
        if (alive.lock()) on_slot_up(s, epoch, Status{});
      });
      continue;
    }
    start_link(s, "", /*redial=*/false, 0);
  }
  deadline_timer_ = engine_.add_timer(deadline, [this] {
    deadline_timer_ = 0;
    if (on_up_)
      std::exchange(on_up_, nullptr)({HCOMM_ERR_TIMEOUT, name_ + ": the links did not come up"});
  });
  tick_timer_ = engine_.add_timer(Clock::now() + tick_period(), [this] { tick(); });
}

void ReliableLink::start_link(int slot, const std::string& peer_offer, bool redial,
                              uint32_t generation) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  const SlotSpec& spec = params_.slots[static_cast<size_t>(slot)];
  s.tap = std::make_unique<Tap>(*this, slot);
  s.state = SlotState::connecting;
  s.redialed = redial;
  const uint64_t epoch = ++s.epoch;
  // Always reported from a task: a protocol may call on_up before create_link() returns.
  auto on_up = [this, alive = std::weak_ptr<bool>(alive_), slot, epoch](const Status& st) {
    engine_.post([this, alive, slot, epoch, st] {
      if (alive.lock()) on_slot_up(slot, epoch, st);
    });
  };
  transport::LinkContext ctx = context_for(slot);
  ctx.peer_address = spec.peer_address;
  ctx.generation = generation;
  const auto deadline = Clock::now() + params_.redial_timeout;
  s.link = redial ? spec.protocol->redial(ctx, peer_offer, deadline, std::move(on_up))
                  : spec.protocol->create_link(ctx, deadline, std::move(on_up));
  if (s.link && tos_ >= 0) s.link->set_traffic_class(tos_);
  if (s.link && pacing_ > 0) s.link->set_pacing_rate(pacing_);
}

void ReliableLink::on_slot_up(int slot, uint64_t epoch, const Status& status) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.epoch != epoch || s.state != SlotState::connecting || !error_.ok()) return;
  if (s.attempt_timer != 0) engine_.cancel_timer(s.attempt_timer);
  s.attempt_timer = 0;
  if (!status.ok()) {
    if (on_up_) {
      std::exchange(on_up_, nullptr)(status);
      return;
    }
    fail_attempt(slot, epoch, status.message());
    return;
  }
  s.state = SlotState::up;
  last_life_ = Clock::now();
  s.detector.reset(last_life_);
  s.last_sent = Clock::now();
  s.heard_since_up = 0;
  // A link made at creation has proven itself by connecting; a reconnected one may be "up" on
  // this side (RDMA queue pairs are ready at once) over a path that still drops everything, so
  // it counts only once the peer's frames arrive on it (see heard()).
  s.proven = !s.redialed;
  if (s.proven) {
    HCOMM_LOG(info, core::log::kNet, "rank %d: %s link up: %s", peer(), slot_name(slot).c_str(),
              s.link->describe().c_str());
    report(ChannelEvent::Kind::up, slot, kNoSlot, "");
  }
  if (on_up_) {
    // Creation: traffic starts on the primary once both links are up.
    if (slots_[kPrimary].state != SlotState::up || slots_[kFallback].state != SlotState::up) return;
    if (deadline_timer_ != 0) engine_.cancel_timer(deadline_timer_);
    deadline_timer_ = 0;
    activate(kPrimary, "", /*followed=*/true);
    std::exchange(on_up_, nullptr)(Status{});
    return;
  }
  if (active_ == kNoSlot) activate(slot, "the only link up again", /*followed=*/false);
}

void ReliableLink::retire(int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (!s.link && !s.tap) return;
  auto grave = std::make_unique<Grave>();
  for (SendProxy* p : s.sends) {
    p->stale = true;
    if (p->entry != nullptr) p->entry->proxy = nullptr;
    p->entry = nullptr;
    grave->sends.push_back(p);
  }
  for (RecvProxy* p : s.recvs) {
    p->stale = true;
    if (p->pending != nullptr) p->pending->proxy = nullptr;
    p->pending = nullptr;
    grave->recvs.push_back(p);
  }
  s.sends.clear();
  s.recvs.clear();
  if (s.tap) s.tap->retired = true;
  if (s.link) {
    // Nothing more moves through it from now on (it is destroyed later, off its own stack):
    // the requests moved to the next link must not be touched by this one again.
    s.link->abandon();
    // Frames that arrived whole were acknowledged: they stay here, for receives posted later.
    for (auto& [header, payload] : s.link->take_stored()) stored_.store(header, std::move(payload));
  }
  grave->link = std::move(s.link);
  grave->tap = std::move(s.tap);
  s.state = SlotState::empty;
  if (s.attempt_timer != 0) engine_.cancel_timer(s.attempt_timer);
  s.attempt_timer = 0;
  s.attempt = 0;
  if (active_ == slot) active_ = kNoSlot;
  // Not now: the link may be calling us from deep inside itself.
  graves_.push_back(std::move(grave));
  engine_.post([this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.lock()) bury();
  });
}

void ReliableLink::bury() {
  auto graves = std::move(graves_);
  graves_.clear();
  graves.clear();  // links first, then the requests they held (~Grave)
}

// ---- faults and switches

std::chrono::milliseconds ReliableLink::peer_silence(Clock::time_point now) const {
  if (last_life_ == Clock::time_point{}) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - last_life_);
}

void ReliableLink::on_slot_failed(int slot, const Status& status, bool graceful) {
  if (graceful) {
    // The peer destroyed its communicator: its goodbye on the link that carries traffic ends
    // the channel; on the other link it only closes that one.
    if (!error_.ok() || closing_) return;
    if (slot == active_ || active_ == kNoSlot) return peer_closed(slot, status);
    return retire(slot);
  }
  fail_slot(slot, status.message());
}

void ReliableLink::peer_closed(int slot, const Status& status) {
  // The peer destroyed its communicator after completing its part of every operation: what it
  // sent is in this link (or delivered), and frames to it count as delivered.
  peer_closed_ = true;
  error_ = status;
  final_ = slots_[static_cast<size_t>(slot)].link.get();
  for (int s = 0; s < 2; ++s) {
    if (s == slot) continue;
    retire(s);
  }
  // The final link keeps its stored frames for receives posted later; receives posted now go
  // there too (it fails those it cannot satisfy).
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [user, p] : pending) {
    if (p->proxy != nullptr) continue;  // posted on the final link already
    final_->post_recv(user);
  }
  for (auto& [user, p] : pending)
    if (p->proxy != nullptr) pending_.emplace(user, std::move(p));
  std::vector<transport::SendRequest*> done;
  for (auto& [seq, e] : entries_)
    if (e->user != nullptr) done.push_back(std::exchange(e->user, nullptr));
  for (auto* user : done) user->on_sent(Status{});
  observer_.on_link_failed(peer(), status, /*graceful=*/true);
}

void ReliableLink::fail_slot(int slot, const std::string& reason) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (!error_.ok() || closing_ || s.state == SlotState::empty) return;
  const auto now = Clock::now();
  // How long this link had been silent when the fault was decided: the detection time (an
  // error reported by the medium is detected at once; a silent path after the keep-alive).
  const auto silent = s.detector.silence(now);
  const bool was_active = active_ == slot;
  const bool was_up = s.state == SlotState::up;
  const std::string what = s.link ? s.link->describe() : slot_name(slot);
  retire(slot);
  if (!was_up) {
    // An attempt that failed before it came up.
    report(ChannelEvent::Kind::redial_failed, slot, kNoSlot, reason);
    return;
  }
  const int other = 1 - slot;
  if (was_active && slots_[static_cast<size_t>(other)].state == SlotState::up) {
    // Moving back to the primary because the fallback closed is the usual end of the peer's
    // fail-back, not news to warn about.
    HCOMM_LOG_AT(other == kFallback ? core::log::Level::warn : core::log::Level::info,
                 core::log::kNet,
                 "%s: rank %d: %s -> %s: %s (%lld ms after its last sign of life on it)",
                 other == kFallback ? "failover" : "failback", peer(), slot_name(slot).c_str(),
                 slot_name(other).c_str(), reason.c_str(), static_cast<long long>(silent.count()));
    record(other == kFallback ? LinkEvent::Kind::failover : LinkEvent::Kind::failback, slot, other,
           reason, static_cast<double>(silent.count()));
    report(ChannelEvent::Kind::down, slot, kNoSlot, reason);
    activate(other, reason, /*followed=*/true);  // logged and recorded above
    return;
  }
  HCOMM_LOG(warn, core::log::kNet, "rank %d: %s link down: %s: %s%s", peer(),
            slot_name(slot).c_str(), what.c_str(), reason.c_str(),
            was_active ? " (no other link up: operations wait)" : "");
  record(LinkEvent::Kind::link_down, slot, kNoSlot, reason, static_cast<double>(silent.count()));
  report(ChannelEvent::Kind::down, slot, kNoSlot, reason);
  if (was_active) report(ChannelEvent::Kind::switched, kNoSlot, slot, reason);
}

void ReliableLink::activate(int slot, const std::string& reason, bool quiet) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (!error_.ok() || closing_ || s.state != SlotState::up || active_ == slot) return;
  const int from = active_;
  const int before = last_active_;
  if (from != kNoSlot) {
    // The link left behind is dropped: frames still in it are sent again on the new one, and
    // the supervisor makes it again (a fallback must be ready for the next fault).
    retire(from);
    report(ChannelEvent::Kind::down, from, kNoSlot, "traffic moved to " + slot_name(slot));
  }
  active_ = slot;
  last_active_ = slot;
  if (!quiet && before != kNoSlot && before != slot) {
    const bool back = slot == kPrimary;
    if (back)
      HCOMM_LOG(info, core::log::kNet, "failback: rank %d: %s -> %s: %s", peer(),
                slot_name(before).c_str(), slot_name(slot).c_str(), reason.c_str());
    else
      HCOMM_LOG(warn, core::log::kNet, "failover: rank %d: %s -> %s: %s", peer(),
                slot_name(before).c_str(), slot_name(slot).c_str(), reason.c_str());
    record(back ? LinkEvent::Kind::failback : LinkEvent::Kind::failover, before, slot, reason);
  }
  send_on(slot, kSwitch, static_cast<uint32_t>(slot), 0, "");
  send_ack();
  for (auto& a : std::exchange(held_aborts_, {}))
    if (active_ == slot) s.link->send_abort(a.comm_id, a.op_seq, a.reason);
  // Every frame not acknowledged goes again, in order; the peer drops what it has. A send may
  // fail this link on the spot (and switch again, from inside the call): each step looks the
  // frame up anew and stops once the link is no longer the active one.
  uint64_t frames = 0;
  uint64_t bytes = 0;
  std::vector<uint64_t> again;
  std::vector<uint64_t> done;  // acknowledged while their send was on the link left behind
  for (auto& [seq, e] : entries_) {
    if (e->proxy != nullptr) continue;
    (e->acked ? done : again).push_back(seq);
  }
  for (uint64_t seq : done)
    if (auto it = entries_.find(seq); it != entries_.end()) maybe_release(it->second.get());
  for (uint64_t seq : again) {
    if (active_ != slot) break;
    auto it = entries_.find(seq);
    if (it == entries_.end() || it->second->acked || it->second->proxy != nullptr) continue;
    if (it->second->sent_once) {
      ++frames;
      bytes += it->second->header.length;
    }
    transmit(it->second.get(), slot);
  }
  if (frames > 0) recorder_.count_replay(frames, bytes);
  std::vector<transport::RecvRequest*> repost;
  for (auto& [user, p] : pending_)
    if (p->proxy == nullptr) repost.push_back(user);
  for (transport::RecvRequest* user : repost) {
    if (active_ != slot) break;
    auto it = pending_.find(user);
    if (it == pending_.end() || it->second->proxy != nullptr) continue;
    if (stored_.contains(user->key)) {
      // Its frame arrived whole on the link left behind: handed over through a proxy, which
      // skips what a half-filled receive has already reduced.
      stored_.deliver_stored(attach_proxy(it->second.get(), slot));
      continue;
    }
    post_pending(it->second.get(), slot);
  }
  if (active_ == slot)
    report(ChannelEvent::Kind::switched, slot, from == kNoSlot ? before : from, reason);
}

void ReliableLink::follow_soon(int slot) {
  engine_.post([this, alive = std::weak_ptr<bool>(alive_), slot] {
    if (!alive.lock() || active_ == slot) return;
    activate(slot, "rank " + std::to_string(peer()) + " moved its traffic there",
             /*quiet=*/false);
  });
}

void ReliableLink::command(const SupervisorCommand& c) {
  if (!error_.ok() || closing_) return;
  switch (c.kind) {
    case SupervisorCommand::Kind::redial:
      redial(c.slot);
      break;
    case SupervisorCommand::Kind::activate:
      if (slots_[static_cast<size_t>(c.slot)].epoch == c.epoch) activate(c.slot, c.reason, false);
      break;
    case SupervisorCommand::Kind::declare_lost:
      declare_lost(c.reason);
      break;
  }
}

void ReliableLink::redial(int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  const SlotSpec& spec = params_.slots[static_cast<size_t>(slot)];
  if (s.state != SlotState::empty) return;
  if (spec.protocol == nullptr || !spec.protocol->can_redial()) {
    report(ChannelEvent::Kind::redial_failed, slot, kNoSlot,
           spec.name + " links cannot be made again");
    return;
  }
  const int other = 1 - slot;
  const bool other_up = slots_[static_cast<size_t>(other)].state == SlotState::up;
  if (other_up) {
    // Coordinated over the other link: the lower rank asks, the higher answers. The higher
    // rank's supervisor keeps asking too, in case the other link dies before the request comes.
    if (!coordinator_) {
      report(ChannelEvent::Kind::redial_failed, slot, kNoSlot, "waiting for the peer to ask");
      return;
    }
    std::string offer;
    if (spec.protocol->needs_offer()) {
      s.tap = std::make_unique<Tap>(*this, slot);
      auto o = spec.protocol->offer(context_for(slot));
      if (!o.ok()) {
        report(ChannelEvent::Kind::redial_failed, slot, kNoSlot, o.status().message());
        return;
      }
      offer = o.value();
      s.state = SlotState::connecting;  // the link is made when the reply comes
      s.redialed = true;
    }
    const uint64_t attempt = s.attempt = ++next_attempt_;
    if (!spec.protocol->needs_offer())
      start_link(slot, "", /*redial=*/true, static_cast<uint32_t>(attempt));
    s.attempt_timer =
        engine_.add_timer(Clock::now() + params_.redial_timeout, [this, slot, attempt] {
          Slot& sl = slots_[static_cast<size_t>(slot)];
          sl.attempt_timer = 0;
          if (sl.attempt == attempt)
            fail_attempt(
                slot, sl.epoch,
                "did not come up within " + std::to_string(params_.redial_timeout.count()) + " ms");
        });
    send_on(other, kRedialRequest, static_cast<uint32_t>(slot), s.attempt, offer);
  } else {
    if (spec.protocol->needs_offer()) {
      report(ChannelEvent::Kind::redial_failed, slot, kNoSlot,
             spec.name + " needs another link up to reconnect");
      return;
    }
    start_link(slot, "", /*redial=*/true, 0);
  }
  HCOMM_LOG(info, core::log::kNet, "rank %d: reconnecting %s", peer(), slot_name(slot).c_str());
  record(LinkEvent::Kind::reconnect_attempt, slot, kNoSlot, "");
}

void ReliableLink::fail_attempt(int slot, uint64_t epoch, const std::string& reason) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.epoch != epoch || s.state != SlotState::connecting) return;
  HCOMM_LOG(info, core::log::kNet, "rank %d: reconnecting %s failed: %s", peer(),
            slot_name(slot).c_str(), reason.c_str());
  retire(slot);
  report(ChannelEvent::Kind::redial_failed, slot, kNoSlot, reason);
}

void ReliableLink::declare_lost(const std::string& reason) {
  for (int i = 0; i < 2; ++i)
    if (slots_[static_cast<size_t>(i)].state == SlotState::up) {
      // It came back meanwhile (not proven yet, but it carries traffic): the supervisor hears
      // so and goes on watching.
      report(ChannelEvent::Kind::up, i, kNoSlot, "");
      return;
    }
  const auto silent = peer_silence(Clock::now());
  error_ = Status{HCOMM_ERR_PEER_LOST,
                  "rank " + std::to_string(peer()) + " (" + params_.slots[kPrimary].peer_address +
                      ") is lost: " + reason +
                      ". The process exited, crashed or cannot be reached; every operation "
                      "involving it fails: shrink() the communicator to go on without it"};
  HCOMM_LOG(warn, core::log::kNet, "%s", error_.message().c_str());
  record(LinkEvent::Kind::peer_lost, last_active_, kNoSlot, reason,
         static_cast<double>(silent.count()));
  for (int s = 0; s < 2; ++s) retire(s);
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [user, p] : pending) user->on_received(error_);
  std::vector<transport::SendRequest*> failed;
  for (auto& [seq, e] : entries_)
    if (e->user != nullptr) failed.push_back(std::exchange(e->user, nullptr));
  entries_.clear();
  for (auto* user : failed) user->on_sent(error_);
  observer_.on_link_failed(peer(), error_, /*graceful=*/false);
}

void ReliableLink::report(ChannelEvent::Kind kind, int slot, int from, const std::string& reason) {
  ChannelEvent e;
  e.peer = peer();
  e.kind = kind;
  e.slot = static_cast<int8_t>(slot);
  e.from = static_cast<int8_t>(from);
  e.epoch = slot >= 0 ? slots_[static_cast<size_t>(slot)].epoch : 0;
  e.silent_ms = peer_silence(Clock::now()).count();
  e.reason = reason;
  listener_.on_channel_event(e);
}

void ReliableLink::record(LinkEvent::Kind kind, int from, int to, const std::string& reason,
                          double detection_ms) {
  LinkEvent e;
  e.peer = peer();
  e.kind = kind;
  e.from = from >= 0 ? slot_name(from) : "";
  e.to = to >= 0 ? slot_name(to) : "";
  e.reason = reason;
  e.detection_ms = detection_ms;
  recorder_.record(std::move(e));
}

const std::string& ReliableLink::slot_name(int slot) const {
  return params_.slots[static_cast<size_t>(slot)].name;
}

// ---- heartbeats and acknowledgements

std::chrono::milliseconds ReliableLink::tick_period() const {
  // Detection within the keep-alive timeout + 50 ms; heartbeats on time at any interval.
  return std::max(std::chrono::milliseconds(5),
                  std::min(std::chrono::milliseconds(50), params_.keepalive_interval / 2));
}

void ReliableLink::tick() {
  tick_timer_ = 0;
  if (!error_.ok() || closing_) return;
  const auto now = Clock::now();
  for (int i = 0; i < 2; ++i) {
    Slot& s = slots_[static_cast<size_t>(i)];
    if (s.state != SlotState::up) continue;
    // Silence is no fault while this side is the one not reading.
    if (s.link->holds_unmatched()) s.detector.heard(now);
    if (s.detector.dead(now)) {
      const auto silent = s.detector.silence(now).count();
      std::string why =
          "no sign of life for " + std::to_string(silent) +
          " ms (HCOMM_KEEPALIVE_TIMEOUT_MS=" + std::to_string(params_.keepalive_timeout.count()) +
          ")";
      if (params_.phi_threshold > 0 && s.detector.silence(now) < params_.keepalive_timeout)
        why = "phi-accrual suspicion " + std::to_string(s.detector.phi(now)) +
              " >= " + std::to_string(params_.phi_threshold) + " after " + std::to_string(silent) +
              " ms of silence";
      fail_slot(i, why);
      continue;
    }
    if (now - s.last_sent >= params_.keepalive_interval) send_on(i, kHeartbeat, 0, 0, "");
  }
  if (unacked_deliveries_ > 0) send_ack();
  if (!error_.ok()) return;
  tick_timer_ = engine_.add_timer(now + tick_period(), [this] { tick(); });
}

void ReliableLink::heard(int slot) {
  last_life_ = Clock::now();
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.detector.heard(last_life_);
  if (s.proven || s.state != SlotState::up || ++s.heard_since_up < kProofFrames) return;
  s.proven = true;
  HCOMM_LOG(info, core::log::kNet, "rank %d: %s link up again: %s", peer(), slot_name(slot).c_str(),
            s.link->describe().c_str());
  record(LinkEvent::Kind::reconnected, slot, kNoSlot, s.link->describe());
  report(ChannelEvent::Kind::up, slot, kNoSlot, "");
}

void ReliableLink::send_on(int slot, uint32_t kind, uint32_t chunk, uint64_t value,
                           std::string payload) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.state != SlotState::up) return;
  FrameHeader h;
  h.comm_id = params_.context.comm_id;
  h.step = kind;
  h.chunk = chunk;
  h.op_seq = value;
  h.offset = window_.cumulative();
  s.last_sent = Clock::now();
  s.link->send_channel(h, std::move(payload));
}

void ReliableLink::send_ack() {
  if (active_ == kNoSlot) return;
  const auto ranges = window_.ranges(kMaxAckRanges);
  std::string payload(ranges.size() * 16, '\0');
  for (size_t i = 0; i < ranges.size(); ++i) {
    std::memcpy(&payload[i * 16], &ranges[i].first, 8);
    std::memcpy(&payload[i * 16 + 8], &ranges[i].second, 8);
  }
  unacked_deliveries_ = 0;
  send_on(active_, kAck, 0, 0, std::move(payload));
}

void ReliableLink::schedule_ack() {
  if (ack_scheduled_) return;
  ack_scheduled_ = true;
  // After the current round: deliveries of one round share one acknowledgement.
  engine_.post([this, alive = std::weak_ptr<bool>(alive_)] {
    if (!alive.lock()) return;
    ack_scheduled_ = false;
    if (unacked_deliveries_ > 0) send_ack();
  });
}

void ReliableLink::on_channel(int slot, const FrameHeader& h, const std::string& payload) {
  if (closing_ || !error_.ok()) return;
  on_acknowledged(h.offset, h.step == kAck ? payload : std::string());
  const int target = static_cast<int>(h.chunk);
  switch (h.step) {
    case kSwitch:
      if (target == slot && active_ != slot) follow_soon(slot);
      break;
    case kRedialRequest: {
      if (target != kPrimary && target != kFallback) break;
      // The peer abandoned its link of that slot: ours goes too, and a new one is made.
      Slot& s = slots_[static_cast<size_t>(target)];
      if (s.state != SlotState::empty) {
        if (active_ == target) break;  // it carries traffic here: a stale request
        retire(target);
        report(ChannelEvent::Kind::down, target, kNoSlot, "the peer makes it again");
      }
      const SlotSpec& spec = params_.slots[static_cast<size_t>(target)];
      if (spec.protocol == nullptr || !spec.protocol->can_redial()) break;
      std::string offer;
      if (spec.protocol->needs_offer()) {
        s.tap = std::make_unique<Tap>(*this, target);
        auto o = spec.protocol->offer(context_for(target));
        if (!o.ok()) {
          HCOMM_LOG(warn, core::log::kNet, "rank %d: cannot offer %s: %s", peer(),
                    spec.name.c_str(), o.status().to_string().c_str());
          break;
        }
        offer = o.value();
      }
      HCOMM_LOG(info, core::log::kNet, "rank %d: reconnecting %s (asked by the peer)", peer(),
                spec.name.c_str());
      record(LinkEvent::Kind::reconnect_attempt, target, kNoSlot, "asked by the peer");
      start_link(target, payload, /*redial=*/true, static_cast<uint32_t>(h.op_seq));
      send_on(slot, kRedialReply, static_cast<uint32_t>(target), h.op_seq, offer);
      break;
    }
    case kRedialReply: {
      if (target != kPrimary && target != kFallback) break;
      Slot& s = slots_[static_cast<size_t>(target)];
      if (s.attempt != h.op_seq || s.link) break;  // an older attempt's, or no offer needed
      start_link(target, payload, /*redial=*/true, static_cast<uint32_t>(h.op_seq));
      break;
    }
    default:
      break;
  }
}

void ReliableLink::on_acknowledged(uint64_t cumulative, const std::string& ranges) {
  std::vector<uint64_t> acked;
  for (auto it = entries_.begin(); it != entries_.end() && it->first <= cumulative; ++it)
    if (!it->second->acked) acked.push_back(it->first);
  for (size_t i = 0; i + 16 <= ranges.size(); i += 16) {
    uint64_t first = 0;
    uint64_t last = 0;
    std::memcpy(&first, ranges.data() + i, 8);
    std::memcpy(&last, ranges.data() + i + 8, 8);
    for (auto it = entries_.lower_bound(first); it != entries_.end() && it->first <= last; ++it)
      if (!it->second->acked) acked.push_back(it->first);
  }
  for (uint64_t seq : acked) entries_.at(seq)->acked = true;
  // Releasing completes callers, whose callbacks may post and release more: look each up anew.
  for (uint64_t seq : acked)
    if (auto it = entries_.find(seq); it != entries_.end()) maybe_release(it->second.get());
}

// ---- sending

void ReliableLink::post_send(transport::SendRequest* request) {
  if (!error_.ok()) return request->on_sent(peer_closed_ ? Status{} : error_);
  auto owned = std::make_unique<Entry>();
  Entry* e = owned.get();
  e->user = request;
  e->header = request->header;
  e->header.link_seq = next_seq_++;
  const size_t bytes = e->header.length;
  const bool stage = e->header.kind == static_cast<uint8_t>(FrameKind::data) &&
                     bytes <= kStageMaxBytes && staged_bytes_ + bytes <= kStageBudget;
  if (stage) {
    if (!spare_.empty()) {
      e->staged = std::move(spare_.back());
      spare_.pop_back();
    }
    e->staged.assign(static_cast<const std::byte*>(request->payload),
                     static_cast<const std::byte*>(request->payload) + bytes);
    e->payload = e->staged.data();
    staged_bytes_ += bytes;
  } else {
    e->payload = request->payload;
    e->buffer = request->buffer;
    e->buffer_bytes = request->buffer_bytes;
    e->header.flags |= transport::kFrameAckNow;
  }
  const uint64_t seq = e->header.link_seq;
  entries_.emplace(seq, std::move(owned));
  if (active_ != kNoSlot) transmit(e, active_);
  // An eager send is complete for the caller once copied (the copy is what gets replayed).
  if (stage) {
    auto it = entries_.find(seq);
    if (it != entries_.end() && it->second->user != nullptr)
      std::exchange(it->second->user, nullptr)->on_sent(Status{});
  }
}

void ReliableLink::transmit(Entry* e, int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  auto* p = new SendProxy();
  p->owner = this;
  p->entry = e;
  p->slot = slot;
  p->header = e->header;
  p->payload = e->payload;
  p->buffer = e->buffer;
  p->buffer_bytes = e->buffer_bytes;
  s.sends.insert(p);
  e->proxy = p;
  e->sent_once = true;
  s.last_sent = Clock::now();
  s.link->post_send(p);  // may call back at once
}

void ReliableLink::on_proxy_sent(SendProxy* p, const Status& status) {
  const int slot = p->slot;
  slots_[static_cast<size_t>(slot)].sends.erase(p);
  Entry* e = p->entry;
  delete p;
  if (e == nullptr) return;
  e->proxy = nullptr;
  // Acknowledged already (the peer had it from an earlier link): done, whatever this send did.
  if (status.ok() || e->acked) return maybe_release(e);
  // A failed send on a failed link is no error for the caller: the frame goes again on the next
  // link. One the link refused by itself (it is still healthy) is.
  const Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.link == nullptr || !s.link->error().ok()) return;
  transport::SendRequest* user = std::exchange(e->user, nullptr);
  recycle(*e);
  entries_.erase(e->header.link_seq);
  if (user != nullptr) user->on_sent(status);
}

void ReliableLink::maybe_release(Entry* e) {
  if (!e->acked || e->proxy != nullptr) return;
  const uint64_t seq = e->header.link_seq;
  transport::SendRequest* user = std::exchange(e->user, nullptr);
  recycle(*e);
  entries_.erase(seq);
  if (user != nullptr) user->on_sent(Status{});
}

void ReliableLink::recycle(Entry& e) {
  if (e.staged.capacity() == 0) return;
  staged_bytes_ -= e.staged.size();
  // Kept for the next eager frame: a fresh 64 KiB allocation per frame costs page faults.
  if (spare_.size() < kSpareBuffers) spare_.push_back(std::move(e.staged));
}

void ReliableLink::send_abort(uint32_t comm_id, uint64_t op_seq, const std::string& reason) {
  // Without a link now, the next one carries it (the peer's operation must fail, not wait).
  if (active_ == kNoSlot) return held_aborts_.push_back({comm_id, op_seq, reason});
  slots_[static_cast<size_t>(active_)].link->send_abort(comm_id, op_seq, reason);
}

void ReliableLink::send_channel(const FrameHeader& header, std::string payload) {
  if (active_ != kNoSlot)
    slots_[static_cast<size_t>(active_)].link->send_channel(header, std::move(payload));
}

// ---- receiving

void ReliableLink::post_recv(transport::RecvRequest* request) {
  if (stored_.deliver_stored(request)) return;
  if (final_ != nullptr) return final_->post_recv(request);
  if (!error_.ok()) return request->on_received(error_);
  auto owned = std::make_unique<Pending>();
  Pending* p = owned.get();
  p->user = request;
  pending_.emplace(request, std::move(owned));
  if (active_ != kNoSlot) post_pending(p, active_);
}

void ReliableLink::post_pending(Pending* pending, int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.link->post_recv(attach_proxy(pending, slot));  // may deliver a stored frame at once
}

ReliableLink::RecvProxy* ReliableLink::attach_proxy(Pending* pending, int slot) {
  auto* p = new RecvProxy();
  p->owner = this;
  p->pending = pending;
  p->slot = slot;
  p->key = pending->user->key;
  slots_[static_cast<size_t>(slot)].recvs.insert(p);
  pending->proxy = p;
  return p;
}

bool ReliableLink::cancel_recv(transport::RecvRequest* request) {
  if (final_ != nullptr && pending_.count(request) == 0) return final_->cancel_recv(request);
  auto it = pending_.find(request);
  if (it == pending_.end()) return false;
  Pending* p = it->second.get();
  if (RecvProxy* proxy = p->proxy) {
    Slot& s = slots_[static_cast<size_t>(proxy->slot)];
    if (!s.link->cancel_recv(proxy)) return false;
    s.recvs.erase(proxy);
    delete proxy;
  }
  pending_.erase(it);
  return true;
}

void ReliableLink::on_proxy_received(RecvProxy* proxy, const Status& status) {
  const Slot& slot = slots_[static_cast<size_t>(proxy->slot)];
  const bool link_failed = slot.link == nullptr || !slot.link->error().ok();
  slots_[static_cast<size_t>(proxy->slot)].recvs.erase(proxy);
  Pending* p = proxy->pending;
  const uint64_t seq = proxy->seq;
  const uint8_t flags = proxy->flags;
  const bool rejected = proxy->rejected;
  delete proxy;
  if (p == nullptr) return;
  p->proxy = nullptr;
  if (!status.ok() && !rejected && link_failed && final_ == nullptr) {
    // The link failed under it: posted again on the next link (or failed when the peer is
    // lost). After the peer's goodbye, the final link's verdict stands.
    return;
  }
  transport::RecvRequest* user = p->user;
  pending_.erase(user);
  if (status.ok() || rejected) on_delivered(seq, flags);
  user->on_received(status);
}

void ReliableLink::on_delivered(uint64_t seq, uint8_t flags) {
  // Arrived whole: in its receive, or stored for it (the store survives a failover). The
  // sender keeps it until then — no longer: a send completes once the peer has the bytes,
  // whether or not its receive is posted yet (as an eager or buffered send does).
  if (seq == 0 || window_.delivered(seq)) return;
  window_.mark(seq);
  ++unacked_deliveries_;
  // The sender of a large frame waits for this: answered at once, from inside the link's
  // receive path (links take sends from their callbacks).
  if ((flags & transport::kFrameAckNow) != 0)
    send_ack();
  else if (unacked_deliveries_ >= kLazyAcks)
    schedule_ack();
}

bool ReliableLink::drop_duplicate(int slot, const FrameHeader& h) {
  if (h.link_seq != 0 && window_.delivered(h.link_seq)) {
    recorder_.count_duplicate();
    ++unacked_deliveries_;
    schedule_ack();  // the peer sent it again: it lacks the acknowledgement
    return true;
  }
  // The peer sends here: it moved its traffic (its switch frame may come later).
  if (slot != active_ && slots_[static_cast<size_t>(slot)].state == SlotState::up &&
      active_ != kNoSlot)
    follow_soon(slot);
  return false;
}

// ---- closing

void ReliableLink::close() {
  if (closing_) return;
  closing_ = true;
  // The executor fails every operation now and frees their requests: nothing here may call
  // them back from now on.
  forget_requests();
  if (tick_timer_ != 0) engine_.cancel_timer(tick_timer_);
  tick_timer_ = 0;
  if (!error_.ok()) return;
  // A goodbye on both links; the one on the link that carries traffic follows the frames queued
  // there, and that link is the one whose end the data plane waits for.
  for (int s = 0; s < 2; ++s)
    if (s != active_ && slots_[static_cast<size_t>(s)].state == SlotState::up)
      slots_[static_cast<size_t>(s)].link->close();
  if (active_ != kNoSlot) {
    final_ = slots_[static_cast<size_t>(active_)].link.get();
    final_->close();
  }
}

void ReliableLink::forget_requests() {
  for (auto& [seq, e] : entries_) e->user = nullptr;
  for (auto& [user, p] : pending_)
    if (p->proxy != nullptr) p->proxy->pending = nullptr;
  pending_.clear();
}

void ReliableLink::abandon() {
  closing_ = true;
  forget_requests();
  for (int s = 0; s < 2; ++s) retire(s);
}

const Status& ReliableLink::error() const {
  if (closing_ && error_.ok() && final_ != nullptr) return final_->error();
  if (closing_ && error_.ok() && final_ == nullptr) {
    static const Status closed{HCOMM_ERR_ABORTED, "the communicator was closed"};
    return closed;
  }
  return error_;
}

void ReliableLink::set_traffic_class(int tos) {
  tos_ = tos;
  for (Slot& s : slots_)
    if (s.link) s.link->set_traffic_class(tos);
}

void ReliableLink::set_pacing_rate(double bytes_per_second) {
  pacing_ = bytes_per_second;
  for (Slot& s : slots_)
    if (s.link) s.link->set_pacing_rate(bytes_per_second);
}

transport::LinkCaps ReliableLink::caps() const {
  transport::LinkCaps c;
  c.medium = "reliable";
  c.max_frame_bytes = SIZE_MAX;
  for (const Slot& s : slots_)
    if (s.link) c.max_frame_bytes = std::min(c.max_frame_bytes, s.link->caps().max_frame_bytes);
  c.one_sided = false;
  c.detects_peer_failure = true;
  return c;
}

}  // namespace hcomm::failover
