#include "failover/channel_message.hpp"

#include <cassert>
#include <cstring>

#include "transport/link.hpp"

namespace hcomm::failover {
namespace {

using transport::FrameHeader;
using transport::FrameKind;

constexpr size_t kRangeBytes = 16;
constexpr uint8_t kBusyBit = 1;
constexpr uint8_t kPacedBit = 2;

Status malformed(const std::string& what) {
  return {HCOMM_ERR_TRANSPORT, "malformed reliable-channel message: " + what};
}

bool names_slot(ChannelMessage::Kind kind) {
  return kind == ChannelMessage::Kind::switched || kind == ChannelMessage::Kind::redial_request ||
         kind == ChannelMessage::Kind::redial_reply || kind == ChannelMessage::Kind::admit;
}

bool is_redial(ChannelMessage::Kind kind) {
  return kind == ChannelMessage::Kind::redial_request || kind == ChannelMessage::Kind::redial_reply;
}

bool known(uint32_t kind) {
  return kind >= static_cast<uint32_t>(ChannelMessage::Kind::heartbeat) &&
         kind <= static_cast<uint32_t>(ChannelMessage::Kind::admit);
}

/// Ascending, disjoint, first <= last, at most kMaxAckRanges; empty when so.
std::string check_ranges(const std::vector<AckRange>& ranges) {
  if (ranges.size() > kMaxAckRanges)
    return std::to_string(ranges.size()) + " ranges, more than " + std::to_string(kMaxAckRanges);
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].first > ranges[i].last)
      return "range " + std::to_string(ranges[i].first) + ".." + std::to_string(ranges[i].last) +
             " ends before it starts";
    if (i > 0 && ranges[i].first <= ranges[i - 1].last)
      return "range " + std::to_string(ranges[i].first) + ".." + std::to_string(ranges[i].last) +
             " does not lie above the one before it";
  }
  return {};
}

}  // namespace

const char* to_string(ChannelMessage::Kind kind) {
  switch (kind) {
    case ChannelMessage::Kind::heartbeat:
      return "heartbeat";
    case ChannelMessage::Kind::ack:
      return "ack";
    case ChannelMessage::Kind::switched:
      return "switched";
    case ChannelMessage::Kind::redial_request:
      return "redial request";
    case ChannelMessage::Kind::redial_reply:
      return "redial reply";
    case ChannelMessage::Kind::admit:
      return "admit";
  }
  return "unknown";
}

EncodedChannelMessage encode(const ChannelMessage& m, uint32_t comm_id) {
  assert(check_ranges(m.ranges).empty());
  assert(m.kind == ChannelMessage::Kind::ack || m.ranges.empty());
  assert(names_slot(m.kind) == (m.slot == kPrimary || m.slot == kFallback));
  assert(is_redial(m.kind) || (m.attempt == 0 && m.offer.empty()));
  assert((m.kind == ChannelMessage::Kind::switched) == (m.switches != 0));
  EncodedChannelMessage out;
  FrameHeader& h = out.header;
  h.kind = static_cast<uint8_t>(FrameKind::channel);
  h.comm_id = comm_id;
  h.step = kChannelVersion << 16 | static_cast<uint32_t>(m.kind);
  h.chunk = names_slot(m.kind) ? static_cast<uint32_t>(m.slot) : 0;
  h.op_seq = m.kind == ChannelMessage::Kind::switched ? m.switches : m.attempt;
  h.offset = m.cumulative;
  h.op_bytes = m.stamp_us != 0 ? m.stamp_us : 1;
  h.link_seq = m.echo_us;
  h.redop = static_cast<uint8_t>((m.busy ? kBusyBit : 0) | (m.paced ? kPacedBit : 0));
  if (m.kind == ChannelMessage::Kind::ack) {
    out.payload.resize(m.ranges.size() * kRangeBytes);
    for (size_t i = 0; i < m.ranges.size(); ++i) {
      std::memcpy(&out.payload[i * kRangeBytes], &m.ranges[i].first, 8);
      std::memcpy(&out.payload[i * kRangeBytes + 8], &m.ranges[i].last, 8);
    }
  } else {
    out.payload = m.offer;
  }
  assert(out.payload.size() <= transport::kMaxChannelPayload);
  return out;
}

Expected<ChannelMessage> decode(const FrameHeader& h, const std::string& payload) {
  if (h.kind != static_cast<uint8_t>(FrameKind::channel))
    return malformed("frame kind " + std::to_string(h.kind) + " is not a channel frame");
  const uint32_t version = h.step >> 16;
  if (version != kChannelVersion)
    return malformed("version " + std::to_string(version) + ", expected " +
                     std::to_string(kChannelVersion));
  const uint32_t kind = h.step & 0xffff;
  if (!known(kind)) return malformed("unknown kind " + std::to_string(kind));
  if (payload.size() > transport::kMaxChannelPayload)
    return malformed(std::to_string(payload.size()) + " payload bytes, more than " +
                     std::to_string(transport::kMaxChannelPayload));
  if (h.op_bytes == 0) return malformed("timestamp 0");
  if ((h.redop & ~(kBusyBit | kPacedBit)) != 0)
    return malformed("state bits " + std::to_string(h.redop));
  ChannelMessage m;
  m.kind = static_cast<ChannelMessage::Kind>(kind);
  m.cumulative = h.offset;
  m.stamp_us = h.op_bytes;
  m.echo_us = h.link_seq;
  m.busy = (h.redop & kBusyBit) != 0;
  m.paced = (h.redop & kPacedBit) != 0;
  const std::string name = to_string(m.kind);
  if (names_slot(m.kind)) {
    if (h.chunk != static_cast<uint32_t>(kPrimary) && h.chunk != static_cast<uint32_t>(kFallback))
      return malformed(name + " names slot " + std::to_string(h.chunk));
    m.slot = static_cast<int>(h.chunk);
  } else if (h.chunk != 0) {
    return malformed(name + " with slot " + std::to_string(h.chunk));
  }
  if (is_redial(m.kind)) {
    m.attempt = h.op_seq;
    m.offer = payload;
    return m;
  }
  if (m.kind == ChannelMessage::Kind::switched) {
    if (h.op_seq == 0) return malformed("switch numbered 0");
    m.switches = h.op_seq;
  } else if (h.op_seq != 0) {
    return malformed(name + " with attempt " + std::to_string(h.op_seq));
  }
  if (m.kind != ChannelMessage::Kind::ack) {
    if (!payload.empty())
      return malformed(name + " with " + std::to_string(payload.size()) + " payload bytes");
    return m;
  }
  if (payload.size() % kRangeBytes != 0)
    return malformed("ack of " + std::to_string(payload.size()) +
                     " payload bytes, not a whole number of ranges");
  m.ranges.resize(payload.size() / kRangeBytes);
  for (size_t i = 0; i < m.ranges.size(); ++i) {
    std::memcpy(&m.ranges[i].first, payload.data() + i * kRangeBytes, 8);
    std::memcpy(&m.ranges[i].last, payload.data() + i * kRangeBytes + 8, 8);
  }
  if (std::string why = check_ranges(m.ranges); !why.empty()) return malformed("ack: " + why);
  return m;
}

}  // namespace hcomm::failover
