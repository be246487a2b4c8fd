// ReliableLink: the life cycle of its two links — making them at creation, adopting one made
// elsewhere, reconnecting one that went down (coordinated over the other link), retiring one that
// is left behind — and closing the channel.
#include "failover/reliable_link.hpp"

#include <algorithm>

#include "core/log.hpp"

namespace hcomm::failover {

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
  bool should_drop(const transport::FrameHeader& header) override {
    if (retired) return true;
    owner_.heard(slot_);
    if ((header.flags & transport::kFrameProbe) != 0) {
      owner_.on_probe_frame(slot_, header);
      return true;  // a probe's bytes are measured, never delivered
    }
    if (owner_.drop_duplicate(slot_, header)) return true;
    if (!owner_.observer_.should_drop(header)) return false;
    // Dropped here (its operation was aborted): it arrived all the same, and its sender waits
    // for the acknowledgement.
    owner_.on_delivered(header.link_seq, header.flags);
    return true;
  }
  void on_channel_frame(int, const transport::FrameHeader& header,
                        const std::string& payload) override {
    if (retired) return;
    owner_.heard(slot_);
    owner_.on_channel(slot_, header, payload);
  }
  void on_frame_stored(int, const transport::FrameHeader& header) override {
    if (retired) return;
    owner_.on_delivered(header.link_seq, header.flags);
    // Stored on a link that does not carry traffic (a standby's late frame, or the peer's first
    // on the link it moved to): its receive may be posted on the active link. Stored on the
    // active link while a standby is in the middle of frames: it may be one of those, whole.
    if (owner_.active_ != slot_ || owner_.receiving_beside())
      owner_.defer([o = &owner_, slot = slot_] { o->collect_stored(slot); });
  }
  void on_link_failed(int, const Status& status, bool graceful) override {
    if (retired) return;
    owner_.on_slot_failed(slot_, status, graceful);
  }

 private:
  ReliableLink& owner_;
  const int slot_;
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

ReliableLink::Slot::Slot(const KeepaliveDetector& d, const GrayParams& gray)
    : detector(d), health(gray) {}
ReliableLink::Slot::Slot(Slot&&) noexcept = default;
ReliableLink::Slot::~Slot() = default;

ReliableLink::ReliableLink(ReliableLinkParams params, transport::LinkObserver& observer,
                           ChannelListener& listener, FailoverRecorder& recorder)
    : params_(std::move(params)),
      engine_scheduler_(params_.scheduler != nullptr
                            ? nullptr
                            : std::make_unique<EngineScheduler>(*params_.context.engine)),
      scheduler_(params_.scheduler != nullptr ? *params_.scheduler : *engine_scheduler_),
      observer_(observer),
      listener_(listener),
      recorder_(recorder),
      coordinator_(params_.context.my_rank < params_.context.peer),
      slots_{Slot(KeepaliveDetector(params_.keepalive_interval, params_.keepalive_timeout,
                                    params_.phi_threshold),
                  params_.gray),
             Slot(KeepaliveDetector(params_.keepalive_interval, params_.keepalive_timeout,
                                    params_.phi_threshold),
                  params_.gray)},
      probe_(params_.probe) {
  name_ = params_.slots[kPrimary].name + " " + params_.slots[kPrimary].peer_address + " (rank " +
          std::to_string(peer()) + ", fallback " + params_.slots[kFallback].name + " " +
          params_.slots[kFallback].peer_address + ")";
}

ReliableLink::~ReliableLink() {
  *alive_ = false;
  if (tick_timer_ != 0) scheduler_.cancel_timer(tick_timer_);
  if (deadline_timer_ != 0) scheduler_.cancel_timer(deadline_timer_);
  for (int s = 0; s < 2; ++s) {
    if (slots_[static_cast<size_t>(s)].attempt_timer != 0)
      scheduler_.cancel_timer(slots_[static_cast<size_t>(s)].attempt_timer);
    retire(s);
  }
  graves_.clear();
  // Requests still held are the executor's, which failed them already (fail_all()).
}

void ReliableLink::defer(std::function<void()> task) {
  scheduler_.post([alive = std::weak_ptr<bool>(alive_), task = std::move(task)] {
    if (alive.lock()) task();
  });
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

void ReliableLink::renew_tap(int slot) {
  slots_[static_cast<size_t>(slot)].tap = std::make_unique<Tap>(*this, slot);
}

const std::string& ReliableLink::slot_name(int slot) const {
  return params_.slots[static_cast<size_t>(slot)].name;
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
      defer([this, s, epoch] { on_slot_up(s, epoch, Status{}); });
      continue;
    }
    start_link(s, "", /*redial=*/false, 0);
  }
  deadline_timer_ = scheduler_.add_timer(deadline, [this] {
    deadline_timer_ = 0;
    if (on_up_)
      std::exchange(on_up_, nullptr)({HCOMM_ERR_TIMEOUT, name_ + ": the links did not come up"});
  });
  tick_timer_ = scheduler_.add_timer(scheduler_.now() + tick_period(), [this] { tick(); });
}

void ReliableLink::start_link(int slot, const std::string& peer_offer, bool redial,
                              uint32_t generation) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  const SlotSpec& spec = params_.slots[static_cast<size_t>(slot)];
  renew_tap(slot);
  s.state = SlotState::connecting;
  s.redialed = redial;
  const uint64_t epoch = ++s.epoch;
  // Always reported from a task: a protocol may call on_up before create_link() returns.
  auto on_up = [this, alive = std::weak_ptr<bool>(alive_), slot, epoch](const Status& st) {
    if (alive.lock()) defer([this, slot, epoch, st] { on_slot_up(slot, epoch, st); });
  };
  transport::LinkContext ctx = context_for(slot);
  ctx.peer_address = spec.peer_address;
  ctx.generation = generation;
  const auto deadline = scheduler_.now() + params_.redial_timeout;
  s.link = redial ? spec.protocol->redial(ctx, peer_offer, deadline, std::move(on_up))
                  : spec.protocol->create_link(ctx, deadline, std::move(on_up));
  if (s.link && tos_ >= 0) s.link->set_traffic_class(tos_);
  if (s.link && pacing_ > 0) s.link->set_pacing_rate(pacing_);
}

void ReliableLink::on_slot_up(int slot, uint64_t epoch, const Status& status) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.epoch != epoch || s.state != SlotState::connecting || !error_.ok()) return;
  if (s.attempt_timer != 0) scheduler_.cancel_timer(s.attempt_timer);
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
  last_life_ = scheduler_.now();
  s.detector.reset(last_life_);
  s.last_sent = scheduler_.now();
  s.heard_since_up = 0;
  s.health.restart();
  s.echo.reset();
  s.peer_stamp_us = 0;
  // A link made at creation may carry traffic at once; a reconnected one once it is switched
  // to or admitted.
  s.admitted = !s.redialed;
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
    if (deadline_timer_ != 0) scheduler_.cancel_timer(deadline_timer_);
    deadline_timer_ = 0;
    activate(kPrimary, "", /*quiet=*/true);
    std::exchange(on_up_, nullptr)(Status{});
    return;
  }
  if (active_ == kNoSlot) activate(slot, "the only link up again", /*quiet=*/false);
}

void ReliableLink::retire(int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (!s.link && !s.tap) return;
  auto grave = std::make_unique<Grave>();
  for (SendProxy* p : s.sends) {
    p->stale = true;
    if (p->entry != nullptr) p->entry->in_flight = false;
    p->entry = nullptr;
    grave->sends.push_back(p);
  }
  for (RecvProxy* p : s.recvs) {
    p->stale = true;
    if (p->pending != nullptr) p->pending->proxies[static_cast<size_t>(slot)] = nullptr;
    p->pending = nullptr;
    grave->recvs.push_back(p);
  }
  s.sends.clear();
  s.recvs.clear();
  // Frames that waited on it wait on no link now (a replay counts them on the next).
  replay_.for_each([slot](ReplayBuffer::Frame& f) {
    if (f.counted_slot == slot) f.counted_slot = -1;
  });
  s.health.restart();
  s.admitted = false;
  if (s.tap) s.tap->retired = true;
  if (s.link) {
    // Nothing more moves through it from now on (it is destroyed later, off its own stack):
    // the requests moved to the next link must not be touched by this one again.
    s.link->abandon();
    // Frames that arrived whole were acknowledged: they stay here, for receives posted later.
    keep_stored(*s.link);
  }
  grave->link = std::move(s.link);
  grave->tap = std::move(s.tap);
  s.state = SlotState::empty;
  s.standby = false;
  if (s.attempt_timer != 0) scheduler_.cancel_timer(s.attempt_timer);
  s.attempt_timer = 0;
  s.attempt = 0;
  if (active_ == slot) active_ = kNoSlot;
  // Not now: the link may be calling us from deep inside itself.
  graves_.push_back(std::move(grave));
  defer([this] { bury(); });
  // A link beside the active one (a standby) may have held frames, receives it had matched and
  // frames stored for receives: they go on on the active link now. (When the active link itself
  // goes, the next activate() does the same.)
  if (active_ != kNoSlot && error_.ok() && !closing_ && *alive_) {
    replay(active_);
    hand_over_stored();
  }
}

void ReliableLink::keep_stored(transport::Link& link) {
  for (auto& [header, payload] : link.take_stored()) stored_.store(header, std::move(payload));
}

void ReliableLink::bury() {
  auto graves = std::move(graves_);
  graves_.clear();
  graves.clear();  // links first, then the requests they held (~Grave)
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
      renew_tap(slot);
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
        scheduler_.add_timer(scheduler_.now() + params_.redial_timeout, [this, slot, attempt] {
          Slot& sl = slots_[static_cast<size_t>(slot)];
          sl.attempt_timer = 0;
          if (sl.attempt == attempt)
            fail_attempt(
                slot, sl.epoch,
                "did not come up within " + std::to_string(params_.redial_timeout.count()) + " ms");
        });
    ChannelMessage request;
    request.kind = ChannelMessage::Kind::redial_request;
    request.slot = slot;
    request.attempt = s.attempt;
    request.offer = std::move(offer);
    send_on(other, std::move(request));
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

// ---- closing

void ReliableLink::close() {
  if (closing_) return;
  closing_ = true;
  // The executor fails every operation now and frees their requests: nothing here may call
  // them back from now on.
  forget_requests();
  if (tick_timer_ != 0) scheduler_.cancel_timer(tick_timer_);
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
  replay_.take_requests();
  for (auto& [user, p] : pending_)
    for (RecvProxy* proxy : p->proxies)
      if (proxy != nullptr) proxy->pending = nullptr;
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

transport::MediumCounters ReliableLink::medium_counters() const {
  transport::MediumCounters sum;
  for (const Slot& s : slots_) {
    if (!s.link) continue;
    const transport::MediumCounters c = s.link->medium_counters();
    if (!c.valid) continue;
    sum.valid = true;
    sum.packets_sent += c.packets_sent;
    sum.retransmits += c.retransmits;
    sum.errors += c.errors;
    sum.rtt_us = std::max(sum.rtt_us, c.rtt_us);
  }
  return sum;
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
