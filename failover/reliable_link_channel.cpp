// ReliableLink: the channel's own traffic. A tick watches both links for silence (the keep-alive
// detector) and keeps them talking with heartbeats; every frame from the peer is a sign of life;
// every channel message carries this side's cumulative acknowledgement, and acknowledgements
// proper are sent when the receipts say so. Channel messages from the peer are decoded
// (channel_message.hpp) and acted on: acknowledgements, switch notices, reconnection requests
// and replies. A malformed one is logged and ignored.
#include <algorithm>
#include <string>

#include "core/log.hpp"
#include "failover/reliable_link.hpp"

namespace hcomm::failover {
namespace {

/// Frames from the peer a reconnected link must carry before it counts as up.
constexpr uint32_t kProofFrames = 2;

}  // namespace

std::chrono::milliseconds ReliableLink::tick_period() const {
  // Detection within the keep-alive timeout + 50 ms; heartbeats on time at any interval.
  return std::max(std::chrono::milliseconds(5),
                  std::min(std::chrono::milliseconds(50), params_.keepalive_interval / 2));
}

void ReliableLink::tick() {
  tick_timer_ = 0;
  if (!error_.ok() || closing_) return;
  const auto now = scheduler_.now();
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
    if (now - s.last_sent >= params_.keepalive_interval) send_on(i, ChannelMessage{});
  }
  if (receipts_.owed()) send_ack();
  if (!error_.ok() || closing_) return;
  watch_health(now);
  probe_tick(now);
  publish_health();
  if (!error_.ok()) return;
  tick_timer_ = scheduler_.add_timer(now + tick_period(), [this] { tick(); });
}

void ReliableLink::heard(int slot) {
  last_life_ = scheduler_.now();
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.detector.heard(last_life_);
  if (s.proven || s.state != SlotState::up || ++s.heard_since_up < kProofFrames) return;
  s.proven = true;
  HCOMM_LOG(info, core::log::kNet, "rank %d: %s link up again: %s", peer(), slot_name(slot).c_str(),
            s.link->describe().c_str());
  record(LinkEvent::Kind::reconnected, slot, kNoSlot, s.link->describe());
  report(ChannelEvent::Kind::up, slot, kNoSlot, "");
}

void ReliableLink::send_on(int slot, ChannelMessage message) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.state != SlotState::up) return;
  message.cumulative = receipts_.cumulative();
  message.stamp_us = stamp_now();
  message.busy = s.health.outstanding() > 0;
  message.paced = pacing_ > 0;
  if (s.peer_stamp_us != 0)
    message.echo_us = s.peer_stamp_us +
                      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                scheduler_.now() - s.peer_stamp_at)
                                                .count());
  EncodedChannelMessage frame = encode(message, params_.context.comm_id);
  s.last_sent = scheduler_.now();
  s.link->send_channel(frame.header, std::move(frame.payload));
}

void ReliableLink::send_ack() {
  if (active_ == kNoSlot) return;
  send_on(active_, receipts_.ack());
}

void ReliableLink::schedule_ack() {
  if (ack_scheduled_) return;
  ack_scheduled_ = true;
  // After the current round: deliveries of one round share one acknowledgement.
  defer([this] {
    ack_scheduled_ = false;
    if (receipts_.owed()) send_ack();
  });
}

void ReliableLink::ack_when(Receipts::Due due) {
  switch (due) {
    case Receipts::Due::now:
      // The sender of a large frame waits for this: answered at once, from inside the link's
      // receive path (links take sends from their callbacks).
      send_ack();
      break;
    case Receipts::Due::soon:
      schedule_ack();
      break;
    case Receipts::Due::later:
      break;  // with the next tick
  }
}

void ReliableLink::on_channel(int slot, const transport::FrameHeader& h,
                              const std::string& payload) {
  if (closing_ || !error_.ok()) return;
  Expected<ChannelMessage> decoded = decode(h, payload);
  if (!decoded.ok()) {
    HCOMM_LOG(warn, core::log::kNet, "rank %d: %s: ignored: %s", peer(), slot_name(slot).c_str(),
              decoded.status().message().c_str());
    return;
  }
  const ChannelMessage& m = decoded.value();
  on_stamps(slot, m);
  on_acknowledged(m.cumulative, m.ranges);
  switch (m.kind) {
    case ChannelMessage::Kind::switched:
      // Followed only if no later switch of the peer's was heard of (on the other link).
      if (m.switches <= peer_switches_) break;
      peer_switches_ = m.switches;
      if (m.slot == slot && active_ != slot) follow_soon(slot);
      break;
    case ChannelMessage::Kind::redial_request:
      on_redial_request(slot, m);
      break;
    case ChannelMessage::Kind::redial_reply: {
      Slot& s = slots_[static_cast<size_t>(m.slot)];
      if (s.attempt != m.attempt || s.link) break;  // an older attempt's, or no offer needed
      start_link(m.slot, m.offer, /*redial=*/true, static_cast<uint32_t>(m.attempt));
      break;
    }
    case ChannelMessage::Kind::admit:
      // The coordinator's supervisor admitted the link to the split: this side follows.
      admit(m.slot, /*tell_peer=*/false);
      break;
    case ChannelMessage::Kind::heartbeat:
    case ChannelMessage::Kind::ack:
      break;
  }
}

void ReliableLink::on_redial_request(int slot, const ChannelMessage& m) {
  const int target = m.slot;
  // The peer abandoned its link of that slot: ours goes too, and a new one is made.
  Slot& s = slots_[static_cast<size_t>(target)];
  if (s.state != SlotState::empty) {
    if (active_ == target) return;  // it carries traffic here: a stale request
    retire(target);
    report(ChannelEvent::Kind::down, target, kNoSlot, "the peer makes it again");
  }
  const SlotSpec& spec = params_.slots[static_cast<size_t>(target)];
  if (spec.protocol == nullptr || !spec.protocol->can_redial()) return;
  std::string offer;
  if (spec.protocol->needs_offer()) {
    renew_tap(target);
    auto o = spec.protocol->offer(context_for(target));
    if (!o.ok()) {
      HCOMM_LOG(warn, core::log::kNet, "rank %d: cannot offer %s: %s", peer(), spec.name.c_str(),
                o.status().to_string().c_str());
      return;
    }
    offer = o.value();
  }
  HCOMM_LOG(info, core::log::kNet, "rank %d: reconnecting %s (asked by the peer)", peer(),
            spec.name.c_str());
  record(LinkEvent::Kind::reconnect_attempt, target, kNoSlot, "asked by the peer");
  start_link(target, m.offer, /*redial=*/true, static_cast<uint32_t>(m.attempt));
  ChannelMessage reply;
  reply.kind = ChannelMessage::Kind::redial_reply;
  reply.slot = target;
  reply.attempt = m.attempt;
  reply.offer = std::move(offer);
  send_on(slot, std::move(reply));
}

}  // namespace hcomm::failover
