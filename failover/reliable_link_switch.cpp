// ReliableLink: faults and switches. A link that fails (an error, or silence past the keep-alive)
// is dropped and traffic moves to the other link at once; a switch — failover, fail-back on the
// supervisor's word, or following the peer — sends every unacknowledged frame again and moves
// every waiting receive over. Also the channel's two ends: the peer's goodbye, and its loss.
#include <string>
#include <vector>

#include "core/log.hpp"
#include "failover/reliable_link.hpp"

namespace hcomm::failover {

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
    if (p->posted()) continue;  // posted on the final link already
    final_->post_recv(user);
  }
  for (auto& [user, p] : pending)
    if (p->posted()) pending_.emplace(user, std::move(p));
  for (auto* user : replay_.take_requests()) user->on_sent(Status{});
  observer_.on_link_failed(peer(), status, /*graceful=*/true);
}

void ReliableLink::fail_slot(int slot, const std::string& reason, bool gray) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (!error_.ok() || closing_ || s.state == SlotState::empty) return;
  const auto now = scheduler_.now();
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
    report(ChannelEvent::Kind::down, slot, kNoSlot, reason, gray);
    activate(other, reason, /*quiet=*/true);  // logged and recorded above
    return;
  }
  HCOMM_LOG(warn, core::log::kNet, "rank %d: %s link down: %s: %s%s", peer(),
            slot_name(slot).c_str(), what.c_str(), reason.c_str(),
            was_active ? " (no other link up: operations wait)" : "");
  record(LinkEvent::Kind::link_down, slot, kNoSlot, reason, static_cast<double>(silent.count()));
  report(ChannelEvent::Kind::down, slot, kNoSlot, reason, gray);
  if (was_active) report(ChannelEvent::Kind::switched, kNoSlot, slot, reason);
}

void ReliableLink::activate(int slot, const std::string& reason, bool quiet) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (!error_.ok() || closing_ || s.state != SlotState::up || active_ == slot) return;
  const int from = active_;
  const int before = last_active_;
  // The link left behind is healthy (a faulty one was retired before): it stays up, standing
  // by for the next fault, and delivers what it holds.
  if (from != kNoSlot) stand_by(from);
  active_ = slot;
  last_active_ = slot;
  s.standby = false;
  s.admitted = true;
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
  ChannelMessage notice;
  notice.kind = ChannelMessage::Kind::switched;
  notice.slot = slot;
  notice.switches = ++switches_;
  send_on(slot, std::move(notice));
  send_ack();
  for (auto& a : std::exchange(held_aborts_, {}))
    if (active_ == slot) s.link->send_abort(a.comm_id, a.op_seq, a.reason);
  replay(slot);
  repost(slot);
  if (active_ == slot)
    report(ChannelEvent::Kind::switched, slot, from == kNoSlot ? before : from, reason);
}

void ReliableLink::replay(int slot) {
  // Every frame not acknowledged goes again, in order, unless the link its last send went on is
  // still up (that link delivers it); the peer drops what it has. A send may fail this link on
  // the spot (and switch again, from inside the call): each step looks the frame up anew and
  // stops once the link is no longer the active one.
  uint64_t frames = 0;
  uint64_t bytes = 0;
  std::vector<uint64_t> again;
  std::vector<uint64_t> done;  // acknowledged while their send was on the link left behind
  replay_.idle(done, again);
  for (uint64_t seq : done)
    if (ReplayBuffer::Frame* f = replay_.find(seq)) maybe_release(*f);
  for (uint64_t seq : again) {
    if (active_ != slot) break;
    ReplayBuffer::Frame* f = replay_.find(seq);
    if (f == nullptr || f->acked || f->in_flight) continue;
    if (f->last_slot >= 0) {
      const Slot& on = slots_[static_cast<size_t>(f->last_slot)];
      if (on.state == SlotState::up && on.epoch == f->last_epoch) continue;
    }
    if (f->sent_once) {
      ++frames;
      bytes += f->header.length;
    }
    transmit(*f, slot);
  }
  if (frames > 0) recorder_.count_replay(frames, bytes);
}

void ReliableLink::repost(int slot) {
  std::vector<transport::RecvRequest*> again;
  for (auto& [user, p] : pending_) again.push_back(user);
  for (transport::RecvRequest* user : again) {
    if (active_ != slot) break;
    auto it = pending_.find(user);
    if (it != pending_.end()) post_everywhere(it->second.get());
  }
}

void ReliableLink::stand_by(int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.standby = true;
  // Frames that arrived whole before their receives were posted are for receives that will be
  // posted on the next link.
  keep_stored(*s.link);
  // A receive the link has not matched yet moves to the next link; one it matched completes
  // here (its frame is arriving on this link).
  std::vector<RecvProxy*> recvs(s.recvs.begin(), s.recvs.end());
  for (RecvProxy* p : recvs)
    if (!p->matched) withdraw(p);
}

void ReliableLink::collect_stored(int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (!s.link || s.state != SlotState::up) return;
  keep_stored(*s.link);
  hand_over_stored();
}

void ReliableLink::hand_over_stored() {
  if (active_ == kNoSlot) return;
  // A receive posted on the active link whose frame is stored here instead is taken back from
  // that link (it cannot have matched: its frame came whole on another one) and handed it;
  // receives no link holds (a retired standby's) are posted again.
  const int beside = 1 - active_;
  if (!stored_.empty()) {
    for (const RecvProxy* p : slots_[static_cast<size_t>(beside)].recvs) {
      if (p->pending == nullptr || !p->matched || !stored_.contains(p->key)) continue;
      // The standby cannot give the receive back in the middle of its frame, and the peer
      // will not finish that frame there: the link goes (retire() comes back here after).
      HCOMM_LOG(info, core::log::kNet, "rank %d: %s left: its frames came again on %s", peer(),
                slot_name(beside).c_str(), slot_name(active_).c_str());
      retire(beside);
      report(ChannelEvent::Kind::down, beside, kNoSlot, "its frames came again on the other link");
      return;
    }
  }
  // Receives whose frame is stored here are withdrawn from both links (none of them can have
  // matched: the frame came whole elsewhere) and handed it by repost().
  if (!stored_.empty()) {
    std::vector<RecvProxy*> unmatched;
    for (auto& [user, p] : pending_)
      if (stored_.contains(user->key))
        for (RecvProxy* proxy : p->proxies)
          if (proxy != nullptr && !proxy->matched) unmatched.push_back(proxy);
    for (RecvProxy* proxy : unmatched) withdraw(proxy);
  }
  repost(active_);
}

void ReliableLink::follow_soon(int slot) {
  defer([this, slot] {
    if (active_ == slot) return;
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
    case SupervisorCommand::Kind::probe:
      probe_.aim(c.slot, c.slot == kNoSlot ? kNoSlot : active_);
      if (c.slot != kNoSlot)
        HCOMM_LOG(info, core::log::kNet, "rank %d: probing %s before traffic goes back to it",
                  peer(), slot_name(c.slot).c_str());
      break;
    case SupervisorCommand::Kind::admit:
      if (slots_[static_cast<size_t>(c.slot)].epoch == c.epoch) {
        HCOMM_LOG(info, core::log::kNet, "rank %d: %s carries large frames again: %s", peer(),
                  slot_name(c.slot).c_str(), c.reason.c_str());
        admit(c.slot, /*tell_peer=*/true);
      }
      break;
  }
}

void ReliableLink::declare_lost(const std::string& reason) {
  for (int i = 0; i < 2; ++i)
    if (slots_[static_cast<size_t>(i)].state == SlotState::up) {
      // It came back meanwhile (not proven yet, but it carries traffic): the supervisor hears
      // so and goes on watching.
      report(ChannelEvent::Kind::up, i, kNoSlot, "");
      return;
    }
  const auto silent = peer_silence(scheduler_.now());
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
  const auto failed = replay_.take_requests();
  replay_.clear();
  for (auto* user : failed) user->on_sent(error_);
  observer_.on_link_failed(peer(), error_, /*graceful=*/false);
}

void ReliableLink::report(ChannelEvent::Kind kind, int slot, int from, const std::string& reason,
                          bool gray) {
  ChannelEvent e;
  e.gray = gray;
  e.peer = peer();
  e.kind = kind;
  e.slot = static_cast<int8_t>(slot);
  e.from = static_cast<int8_t>(from);
  e.epoch = slot >= 0 ? slots_[static_cast<size_t>(slot)].epoch : 0;
  e.silent_ms = peer_silence(scheduler_.now()).count();
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

}  // namespace hcomm::failover
