// ReliableLink: link health, gray failures and probes. Every tick reads each link's medium
// counters and closes its health window (link_health.hpp); a link that carries traffic and turns
// sick while the other is up, admitted and healthy is failed like a dead one (a gray failure:
// its frames go again on the other link, it is made again in the background). The coordinator
// probes a link traffic left, on its supervisor's word (link_probe.hpp): probe frames are sent
// straight on the link, outside the numbered traffic, and the peer's reliable channel drops
// them after counting (Tap::should_drop) and echoes each whole round. Channel messages carry
// timestamps and echoes: each one that comes back is a round trip of its link.
#include <algorithm>
#include <vector>

#include "core/log.hpp"
#include "failover/reliable_link.hpp"

namespace hcomm::failover {
namespace {

/// A probe round's piece: a frame of zeros that frees itself once the medium is done with it.
struct ProbePiece final : transport::SendRequest {
  void on_sent(const Status&) override { delete this; }
};

const std::byte* zeros() {
  static const std::vector<std::byte> bytes(LinkProbe::kPieceBytes);
  return bytes.data();
}

/// Rounds larger than this are not echoed (the prober never asks for more).
constexpr uint64_t kMaxProbeBytes = uint64_t{64} << 20;

}  // namespace

uint64_t ReliableLink::stamp_now() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(scheduler_.now().time_since_epoch())
          .count());
}

void ReliableLink::on_stamps(int slot, const ChannelMessage& m) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  const uint64_t now_us = stamp_now();
  s.peer_stamp_us = m.stamp_us;
  s.peer_stamp_at = scheduler_.now();
  s.peer_paced = m.paced;
  if (m.echo_us != 0 && now_us >= m.echo_us)
    s.health.on_round_trip(std::chrono::microseconds(now_us - m.echo_us),
                           /*idle=*/!m.busy && s.health.outstanding() == 0);
}

void ReliableLink::count_on(ReplayBuffer::Frame& f, int slot) {
  if (f.counted_slot == slot) return;
  const auto now = scheduler_.now();
  if (f.counted_slot >= 0)
    slots_[static_cast<size_t>(f.counted_slot)].health.on_withdrawn(f.header.length);
  f.counted_slot = slot;
  if (slot >= 0) f.stamp = slots_[static_cast<size_t>(slot)].health.on_sent(f.header.length, now);
}

void ReliableLink::watch_health(Clock::time_point now) {
  for (Slot& s : slots_) {
    if (s.state != SlotState::up) continue;
    s.health.on_medium(s.link->medium_counters());
    s.health.tick(now);
  }
  const bool both = striping();
  for (int i = 0; i < 2; ++i) {
    const Slot& s = slots_[static_cast<size_t>(i)];
    const Slot& o = slots_[static_cast<size_t>(1 - i)];
    // Only a link that carries traffic is judged, and only while the other could take it.
    if (s.state != SlotState::up || (i != active_ && !both)) continue;
    if (o.state != SlotState::up || !o.proven || !o.admitted) continue;
    std::string why = s.health.sick(o.health.healthy_in_bps(), /*goodput=*/!s.peer_paced);
    if (why.empty() || !o.health.sick(s.health.healthy_in_bps(), !o.peer_paced).empty()) continue;
    recorder_.count_gray();
    fail_slot(i, "gray failure: " + why, /*gray=*/true);
    return;  // one verdict a tick: the other link's figures change with the traffic
  }
}

void ReliableLink::probe_tick(Clock::time_point now) {
  if (probe_.target() == kNoSlot) return;
  probe_.aim(probe_.target(), active_);  // the reference is the link that carries traffic now
  const double healthy = slots_[static_cast<size_t>(probe_.target())].health.healthy_in_bps();
  if (auto verdict = probe_.check_timeout(now, healthy)) report_probe(*verdict);
  if (auto round = probe_.next(now)) send_probe(round->slot, round->round, round->bytes, false);
}

void ReliableLink::send_probe(int slot, uint64_t round, uint64_t total, bool echo) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.state != SlotState::up) return;  // an asked round then fails by its timeout
  uint32_t index = 0;
  for (uint64_t offset = 0; offset < total; offset += LinkProbe::kPieceBytes) {
    auto* piece = new ProbePiece;
    transport::FrameHeader& h = piece->header;
    h.kind = static_cast<uint8_t>(transport::FrameKind::data);
    h.flags = transport::kFrameProbe;
    h.comm_id = params_.context.comm_id;
    h.op_seq = round;
    h.step = echo ? 1 : 0;
    h.chunk = index++;
    h.offset = offset;
    h.length = std::min(LinkProbe::kPieceBytes, total - offset);
    h.op_bytes = total;
    piece->payload = zeros();
    s.link->post_send(piece);              // may complete (and free) it at once
    if (s.state != SlotState::up) return;  // the send failed the link
  }
  s.last_sent = scheduler_.now();
}

void ReliableLink::on_probe_frame(int slot, const transport::FrameHeader& h) {
  if (closing_ || !error_.ok()) return;
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (h.step == 0) {
    // The peer's round: sent back on the same link once all of it arrived.
    if (h.op_bytes <= kMaxProbeBytes && s.echo.on_piece(h.op_seq, h.length, h.op_bytes))
      send_probe(slot, h.op_seq, h.op_bytes, /*echo=*/true);
    return;
  }
  LinkProbe::Measured measured;
  const double healthy = probe_.target() == kNoSlot
                             ? 0
                             : slots_[static_cast<size_t>(probe_.target())].health.healthy_in_bps();
  auto verdict = probe_.on_echo(slot, h.op_seq, h.length, scheduler_.now(), healthy, &measured);
  if (measured.slot != kNoSlot)
    slots_[static_cast<size_t>(measured.slot)].health.on_probe(measured.bps);
  if (verdict) report_probe(*verdict);
}

void ReliableLink::report_probe(const LinkProbe::Verdict& v) {
  recorder_.count_probe(v.passed);
  HCOMM_LOG(debug, core::log::kNet, "rank %d: probe of %s %s: %s", peer(),
            slot_name(v.slot).c_str(), v.passed ? "passed" : "failed", v.why.c_str());
  ChannelEvent e;
  e.peer = peer();
  e.kind = ChannelEvent::Kind::probe;
  e.slot = static_cast<int8_t>(v.slot);
  e.epoch = slots_[static_cast<size_t>(v.slot)].epoch;
  e.passed = v.passed;
  e.reason = v.why;
  listener_.on_channel_event(e);
}

void ReliableLink::publish_health() {
  std::array<LinkHealthInfo, 2> links;
  const bool both = striping();
  for (int i = 0; i < 2; ++i) {
    const Slot& s = slots_[static_cast<size_t>(i)];
    LinkHealthInfo& info = links[static_cast<size_t>(i)];
    info.peer = peer();
    info.link = slot_name(i);
    if (s.state == SlotState::empty)
      info.state = "down";
    else if (s.state == SlotState::connecting)
      info.state = "connecting";
    else if (i == active_)
      info.state = "active";
    else if (!s.proven || !s.admitted)
      info.state = "probation";
    else
      info.state = both ? "multipath" : "standby";
    const HealthFigures f = s.health.figures();
    info.goodput_in_gbps = f.goodput_in_bps * 8 / 1e9;
    info.busy_in_share = f.busy_in_share;
    info.healthy_in_gbps = f.healthy_in_bps * 8 / 1e9;
    info.goodput_out_gbps = f.goodput_out_bps * 8 / 1e9;
    info.healthy_out_gbps = f.healthy_out_bps * 8 / 1e9;
    info.probe_gbps = f.probe_bps * 8 / 1e9;
    info.rtt_us = f.srtt_us;
    info.min_rtt_us = f.min_rtt_us;
    info.medium_rtt_us = f.medium_rtt_us;
    info.loss = f.loss;
    info.packets_sent = f.packets_sent;
    info.retransmits = f.retransmits;
    info.errors = f.errors;
    info.bytes_in = f.bytes_in;
    info.bytes_acked = f.bytes_acked;
  }
  recorder_.publish_links(peer(), links);
}

}  // namespace hcomm::failover
