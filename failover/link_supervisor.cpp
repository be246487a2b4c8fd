#include "failover/link_supervisor.hpp"

#include <algorithm>

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
  const auto slot = static_cast<size_t>(e.slot >= 0 ? e.slot : 0);
  switch (e.kind) {
    case ChannelEvent::Kind::up:
      up_[slot] = true;
      epoch_[slot] = e.epoch;
      backoff_[slot].reset();
      ++lost_gen_;  // a link is up: the peer is not lost
      break;
    case ChannelEvent::Kind::down:
      if (e.epoch < epoch_[slot]) break;  // an older link's news
      up_[slot] = false;
      admitted_[slot] = false;
      if (e.gray) hold_after_gray(e.slot, now);
      schedule_redial(e.slot, now, out);
      if (!up_[kPrimary] && !up_[kFallback]) {
        // The deadline counts from the peer's last sign of life, not from this report.
        out.timers.push_back({now - std::chrono::milliseconds(e.silent_ms) + params_.peer_timeout,
                              token(kLost, 0, ++lost_gen_)});
      }
      break;
    case ChannelEvent::Kind::switched:
      active_ = e.slot;
      if (e.slot != kNoSlot) admitted_[slot] = true;
      if (e.from == kPrimary && e.slot == kFallback && !pinned_ && intensity_.record(now)) {
        pinned_ = true;
        out.pinned = true;
        ++redial_gen_[kPrimary];  // a pending reconnection of the primary is called off
      }
      break;
    case ChannelEvent::Kind::redial_failed:
      schedule_redial(e.slot, now, out);
      break;
    case ChannelEvent::Kind::probe:
      on_probe(e, now, out);
      break;
  }
  aim_probe(out);
  return out;
}

void LinkSupervisor::on_probe(const ChannelEvent& e, Clock::time_point now, Output& out) {
  if (e.slot != probing_ || e.epoch != epoch_[static_cast<size_t>(e.slot)]) return;
  if (!e.passed) {
    passing_since_ = {};
    return;
  }
  if (passing_since_ == Clock::time_point{}) passing_since_ = now;
  if (now - passing_since_ < params_.failback_after) return;
  if (now < hold_until_[static_cast<size_t>(e.slot)]) return;  // a gray failure's hold-down
  const std::string reason = "it passed the data-path probe for " +
                             std::to_string(params_.failback_after.count()) + " ms (" + e.reason +
                             ")";
  if (e.slot == kPrimary) {
    out.commands.push_back({SupervisorCommand::Kind::activate, kPrimary, e.epoch, reason});
  } else {
    admitted_[kFallback] = true;
    out.commands.push_back({SupervisorCommand::Kind::admit, kFallback, e.epoch, reason});
  }
}

void LinkSupervisor::aim_probe(Output& out) {
  int8_t target = kNoSlot;
  if (params_.coordinator && !pinned_ && !lost_) {
    if (active_ == kFallback && up_[kPrimary])
      target = kPrimary;  // a fail-back waits for it
    else if (params_.multipath && active_ == kPrimary && up_[kFallback] && !admitted_[kFallback])
      target = kFallback;  // an admission to the split waits for it
  }
  if (target == probing_) return;
  probing_ = target;
  passing_since_ = {};
  out.commands.push_back({SupervisorCommand::Kind::probe, target, 0, ""});
}

void LinkSupervisor::hold_after_gray(int slot, Clock::time_point now) {
  auto& times = gray_times_[static_cast<size_t>(slot)];
  times.erase(
      std::remove_if(times.begin(), times.end(),
                     [&](Clock::time_point t) { return now - t > params_.failover_window; }),
      times.end());
  times.push_back(now);
  const auto doublings = std::min<size_t>(times.size() - 1, 4);
  hold_until_[static_cast<size_t>(slot)] = now + params_.gray_hold * (1 << doublings);
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

}  // namespace hcomm::failover
