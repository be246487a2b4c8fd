#include "failover/link_health.hpp"

#include <algorithm>
#include <cstdio>

namespace hcomm::failover {
namespace {

double seconds(LinkHealth::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string gbps(double bytes_per_second) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", bytes_per_second * 8 / 1e9);
  return text;
}

}  // namespace

void LinkHealth::account(Clock::time_point now) {
  if (outstanding_ > 0 && now > busy_from_) open_.busy_s += seconds(now - busy_from_);
  busy_from_ = now;
}

void LinkHealth::on_sent(uint64_t bytes, Clock::time_point now) {
  account(now);
  outstanding_ += bytes;
}

void LinkHealth::on_acked(uint64_t bytes, Clock::time_point now) {
  account(now);
  outstanding_ -= std::min(bytes, outstanding_);
  open_.acked += bytes;
  acked_total_ += bytes;
}

void LinkHealth::on_withdrawn(uint64_t bytes, Clock::time_point now) {
  account(now);
  outstanding_ -= std::min(bytes, outstanding_);
}

void LinkHealth::on_round_trip(std::chrono::microseconds rtt) {
  const double us = static_cast<double>(std::max<int64_t>(1, rtt.count()));
  srtt_us_ = srtt_us_ == 0 ? us : srtt_us_ + (us - srtt_us_) / 8;
  min_rtt_us_ = min_rtt_us_ == 0 ? us : std::min(min_rtt_us_, us);
  if (outstanding_ != 0) return;
  idle_rtts_us_.push_back(us);
  if (idle_rtts_us_.size() > kRttSamples) idle_rtts_us_.pop_front();
}

void LinkHealth::on_medium(const transport::MediumCounters& c) {
  if (!c.valid) return;
  // Counters only grow on one link; smaller ones belong to a link made since (restart()).
  const auto delta = [](uint64_t now, uint64_t before) {
    return now >= before ? now - before : now;
  };
  open_.packets += delta(c.packets_sent, last_.packets_sent);
  open_.retransmits += delta(c.retransmits, last_.retransmits);
  last_ = c;
  medium_rtt_us_ = c.rtt_us;
}

void LinkHealth::on_probe(double bytes_per_second) {
  probe_bps_ = bytes_per_second;
}

void LinkHealth::restart(Clock::time_point now) {
  busy_from_ = now;
  outstanding_ = 0;
  base_packets_ += last_.packets_sent;
  base_retransmits_ += last_.retransmits;
  base_errors_ += last_.errors;
  last_ = {};
  open_ = Bucket{};
  open_.start = now;
  closed_.clear();
  idle_rtts_us_.clear();
}

void LinkHealth::tick(Clock::time_point now) {
  account(now);
  if (open_.start == Clock::time_point{}) open_.start = now;
  open_.end = now;
  closed_.push_back(open_);
  open_ = Bucket{};
  open_.start = now;
  while (!closed_.empty() && closed_.front().end <= now - params_.window) closed_.pop_front();
  const Window w = window();
  const bool lossy =
      params_.loss_ratio > 0 && w.packets >= kMinPackets &&
      static_cast<double>(w.retransmits) >= params_.loss_ratio * static_cast<double>(w.packets);
  if (!lossy && w.busy_s >= seconds(kMinBusy))
    healthy_bps_ = std::max(healthy_bps_, static_cast<double>(w.acked) / w.busy_s);
}

LinkHealth::Window LinkHealth::window() const {
  Window w;
  if (closed_.empty()) return w;
  w.span_s = seconds(closed_.back().end - closed_.front().start);
  for (const Bucket& b : closed_) {
    w.busy_s += b.busy_s;
    w.acked += b.acked;
    w.packets += b.packets;
    w.retransmits += b.retransmits;
  }
  return w;
}

double LinkHealth::goodput_bps() const {
  const Window w = window();
  return w.busy_s > 0 ? static_cast<double>(w.acked) / w.busy_s : 0;
}

double LinkHealth::planning_bps() const {
  const Window w = window();
  if (w.busy_s >= seconds(kMinBusy)) return static_cast<double>(w.acked) / w.busy_s;
  return healthy_bps_ > 0 ? healthy_bps_ : probe_bps_;
}

HealthFigures LinkHealth::figures() const {
  const Window w = window();
  HealthFigures f;
  f.goodput_bps = w.busy_s > 0 ? static_cast<double>(w.acked) / w.busy_s : 0;
  f.busy_share = w.span_s > 0 ? std::min(1.0, w.busy_s / w.span_s) : 0;
  f.healthy_bps = healthy_bps_;
  f.probe_bps = probe_bps_;
  f.srtt_us = srtt_us_;
  f.min_rtt_us = min_rtt_us_;
  f.medium_rtt_us = medium_rtt_us_;
  f.loss = w.packets > 0 ? static_cast<double>(w.retransmits) / static_cast<double>(w.packets) : 0;
  f.packets_sent = base_packets_ + last_.packets_sent;
  f.retransmits = base_retransmits_ + last_.retransmits;
  f.errors = base_errors_ + last_.errors;
  f.acked_bytes = acked_total_;
  return f;
}

std::string LinkHealth::sick(double other_bps, double cap_bps) const {
  const Window w = window();
  const double span = seconds(params_.window);
  if (w.span_s < span / 2) return "";  // too little history since the link (re)started
  const std::string over = " over " + std::to_string(params_.window.count()) + " ms";
  if (params_.goodput_ratio > 0 && healthy_bps_ > 0 && w.busy_s >= kBusyShare * w.span_s) {
    const double got = static_cast<double>(w.acked) / w.busy_s;
    const double expect = cap_bps > 0 ? std::min(healthy_bps_, cap_bps) : healthy_bps_;
    if (got < params_.goodput_ratio * expect && (other_bps <= 0 || got < other_bps))
      return "goodput " + gbps(got) + " Gbit/s" + over + " with frames waiting, " +
             std::to_string(static_cast<int>(100 * got / expect)) + "% of its healthy " +
             gbps(expect) + " Gbit/s";
  }
  if (params_.loss_ratio > 0 && w.packets >= kMinPackets &&
      static_cast<double>(w.retransmits) >= params_.loss_ratio * static_cast<double>(w.packets))
    return std::to_string(w.retransmits) + " of " + std::to_string(w.packets) + " packets resent" +
           over + " (" +
           std::to_string(static_cast<int>(100.0 * static_cast<double>(w.retransmits) /
                                           static_cast<double>(w.packets))) +
           "% loss)";
  const double limit_us = static_cast<double>(params_.rtt_limit.count()) * 1000;
  if (limit_us > 0 && idle_rtts_us_.size() == kRttSamples) {
    const double least = *std::min_element(idle_rtts_us_.begin(), idle_rtts_us_.end());
    if (least > limit_us && least > 10 * min_rtt_us_)
      return "round trip over " + std::to_string(params_.rtt_limit.count()) + " ms " +
             std::to_string(kRttSamples) + " times in a row (at least " +
             std::to_string(static_cast<int>(least / 1000)) + " ms, smallest seen " +
             std::to_string(static_cast<int>(min_rtt_us_)) + " us)";
  }
  return "";
}

}  // namespace hcomm::failover
