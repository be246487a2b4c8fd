#include "failover/link_supervisor.hpp"

namespace hcomm::failover {

LinkSupervisor::LinkSupervisor(const Params& params)
    : params_(params),
      backoff_{Backoff(params.reconnect_min, params.reconnect_max, params.seed),
               Backoff(params.reconnect_min, params.reconnect_max, params.seed ^ 0x9e3779b9)},
      intensity_(params.failover_limit, params.failover_window) {}

LinkSupervisor::Output LinkSupervisor::on_event(const ChannelEvent& e, Clock::time_point now) {
  Output out;
  // A link that comes back after the loss was decided, before the link carried it out, undoes
  // it (the ReliableLink declines a loss while a link is up and reports it).
  if (lost_ && e.kind == ChannelEvent::Kind::up) lost_ = false;
  if (lost_) return out;
  switch (e.kind) {
    case ChannelEvent::Kind::up:
      up_[static_cast<size_t>(e.slot)] = true;
      epoch_[static_cast<size_t>(e.slot)] = e.epoch;
      backoff_[static_cast<size_t>(e.slot)].reset();
      ++lost_gen_;  // a link is up: the peer is not lost
      maybe_schedule_failback(now, out);
      break;
    case ChannelEvent::Kind::down:
      if (e.epoch < epoch_[static_cast<size_t>(e.slot)]) break;  // an older link's news
      up_[static_cast<size_t>(e.slot)] = false;
      schedule_redial(e.slot, now, out);
      if (!up_[kPrimary] && !up_[kFallback]) {
        // The deadline counts from the peer's last sign of life, not from this report.
        out.timers.push_back({now - std::chrono::milliseconds(e.silent_ms) + params_.peer_timeout,
                              token(kLost, 0, ++lost_gen_)});
      }
      break;
    case ChannelEvent::Kind::switched:
      active_ = e.slot;
      if (e.from == kPrimary && e.slot == kFallback && !pinned_ && intensity_.record(now)) {
        pinned_ = true;
        out.pinned = true;
        ++redial_gen_[kPrimary];  // a pending reconnection of the primary is called off
      }
      maybe_schedule_failback(now, out);
      break;
    case ChannelEvent::Kind::redial_failed:
      schedule_redial(e.slot, now, out);
      break;
  }
  return out;
}

LinkSupervisor::Output LinkSupervisor::on_timer(uint64_t t, Clock::time_point now) {
  (void)now;
  Output out;
  if (lost_) return out;
  const auto purpose = static_cast<Purpose>(t >> 56);
  const auto slot = static_cast<int8_t>((t >> 48) & 0xff);
  const uint64_t gen = t & 0xffffffffffffull;
  switch (purpose) {
    case kRedial:
      if (gen == (redial_gen_[static_cast<size_t>(slot)] & 0xffffffffffffull) &&
          !up_[static_cast<size_t>(slot)])
        out.commands.push_back({SupervisorCommand::Kind::redial, slot, 0, ""});
      break;
    case kFailback:
      if (!pinned_ && active_ == kFallback && up_[kPrimary] &&
          gen == (epoch_[kPrimary] & 0xffffffffffffull))
        out.commands.push_back({SupervisorCommand::Kind::activate, kPrimary, epoch_[kPrimary],
                                "the primary carried heartbeats for " +
                                    std::to_string(params_.failback_after.count()) + " ms"});
      break;
    case kLost:
      if (gen == (lost_gen_ & 0xffffffffffffull) && !up_[kPrimary] && !up_[kFallback]) {
        lost_ = true;
        out.commands.push_back({SupervisorCommand::Kind::declare_lost, kNoSlot, 0,
                                "no link came back within HCOMM_PEER_TIMEOUT_MS=" +
                                    std::to_string(params_.peer_timeout.count()) +
                                    " ms of its last sign of life"});
      }
      break;
  }
  return out;
}

void LinkSupervisor::schedule_redial(int slot, Clock::time_point now, Output& out) {
  if (slot == kPrimary && (pinned_ || !params_.primary_redials)) return;
  out.timers.push_back({now + backoff_[static_cast<size_t>(slot)].next(),
                        token(kRedial, slot, ++redial_gen_[static_cast<size_t>(slot)])});
}

void LinkSupervisor::maybe_schedule_failback(Clock::time_point now, Output& out) {
  if (params_.coordinator && !pinned_ && active_ == kFallback && up_[kPrimary])
    out.timers.push_back(
        {now + params_.failback_after, token(kFailback, kPrimary, epoch_[kPrimary])});
}

}  // namespace hcomm::failover
