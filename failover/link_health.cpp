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

/// `now - before` of a counter that only grows on one link; a smaller value belongs to a link
/// made since (counting from 0).
uint64_t grown(uint64_t now, uint64_t before) {
  return now >= before ? now - before : now;
}

}  // namespace

DeliveryStamp LinkHealth::on_sent(uint64_t bytes, Clock::time_point now) {
  if (outstanding_ == 0) {
    // From idle: the sample's interval starts now (the link waited for nothing before).
    delivered_time_ = now;
    first_sent_time_ = now;
  }
  outstanding_ += bytes;
  return DeliveryStamp{delivered_, delivered_time_, first_sent_time_, now};
}

void LinkHealth::on_acked(uint64_t bytes, const DeliveryStamp& stamp, Clock::time_point now) {
  outstanding_ -= std::min(bytes, outstanding_);
  delivered_ += bytes;
  const auto interval =
      std::max(now - stamp.delivered_time, stamp.sent_time - stamp.first_sent_time);
  if (stamp.delivered_time != Clock::time_point{} && interval >= kMinInterval)
    open_.best_out_bps = std::max(
        open_.best_out_bps, static_cast<double>(delivered_ - stamp.delivered) / seconds(interval));
  delivered_time_ = now;
  first_sent_time_ = stamp.sent_time;
}

void LinkHealth::on_withdrawn(uint64_t bytes) {
  outstanding_ -= std::min(bytes, outstanding_);
}

void LinkHealth::on_round_trip(std::chrono::microseconds rtt, bool idle) {
  const double us = static_cast<double>(std::max<int64_t>(1, rtt.count()));
  srtt_us_ = srtt_us_ == 0 ? us : srtt_us_ + (us - srtt_us_) / 8;
  min_rtt_us_ = min_rtt_us_ == 0 ? us : std::min(min_rtt_us_, us);
  if (!idle) return;
  idle_rtts_us_.push_back(us);
  if (idle_rtts_us_.size() > kRttSamples) idle_rtts_us_.pop_front();
}

void LinkHealth::on_medium(const transport::MediumCounters& c) {
  open_.bytes_in += grown(c.bytes_received, last_.bytes_received);
  open_.busy_in_s += static_cast<double>(grown(c.receiving_us, last_.receiving_us)) / 1e6;
  if (c.valid) {
    open_.packets += grown(c.packets_sent, last_.packets_sent);
    open_.retransmits += grown(c.retransmits, last_.retransmits);
  }
  last_ = c;
}

void LinkHealth::restart() {
  outstanding_ = 0;
  before_.bytes_received += last_.bytes_received;
  before_.packets_sent += last_.packets_sent;
  before_.retransmits += last_.retransmits;
  before_.errors += last_.errors;
  last_ = {};
  open_ = Bucket{};
  closed_.clear();
  idle_rtts_us_.clear();
}

void LinkHealth::tick(Clock::time_point now) {
  if (open_.start == Clock::time_point{}) open_.start = now;
  open_.end = now;
  closed_.push_back(open_);
  open_ = Bucket{};
  open_.start = now;
  while (!closed_.empty() && closed_.front().end <= now - params_.window) closed_.pop_front();
  const Window w = window();
  if (lossy(w)) return;
  if (w.busy_in_s >= seconds(kMinBusy)) healthy_in_bps_ = std::max(healthy_in_bps_, w.in_bps());
  healthy_out_bps_ = std::max(healthy_out_bps_, w.best_out_bps);
}

LinkHealth::Window LinkHealth::window() const {
  Window w;
  if (closed_.empty()) return w;
  w.span_s = seconds(closed_.back().end - closed_.front().start);
  for (const Bucket& b : closed_) {
    w.bytes_in += b.bytes_in;
    w.busy_in_s += b.busy_in_s;
    w.best_out_bps = std::max(w.best_out_bps, b.best_out_bps);
    w.packets += b.packets;
    w.retransmits += b.retransmits;
  }
  return w;
}

bool LinkHealth::lossy(const Window& w) const {
  return params_.loss_ratio > 0 && w.packets >= kMinPackets &&
         static_cast<double>(w.retransmits) >= params_.loss_ratio * static_cast<double>(w.packets);
}

double LinkHealth::planning_bps() const {
  const Window w = window();
  if (w.best_out_bps > 0) return w.best_out_bps;
  return healthy_out_bps_ > 0 ? healthy_out_bps_ : probe_bps_;
}

HealthFigures LinkHealth::figures() const {
  const Window w = window();
  HealthFigures f;
  f.goodput_in_bps = w.in_bps();
  f.busy_in_share = w.span_s > 0 ? std::min(1.0, w.busy_in_s / w.span_s) : 0;
  f.healthy_in_bps = healthy_in_bps_;
  f.goodput_out_bps = w.best_out_bps;
  f.healthy_out_bps = healthy_out_bps_;
  f.probe_bps = probe_bps_;
  f.srtt_us = srtt_us_;
  f.min_rtt_us = min_rtt_us_;
  f.medium_rtt_us = last_.rtt_us;
  f.loss = w.packets > 0 ? static_cast<double>(w.retransmits) / static_cast<double>(w.packets) : 0;
  f.packets_sent = before_.packets_sent + last_.packets_sent;
  f.retransmits = before_.retransmits + last_.retransmits;
  f.errors = before_.errors + last_.errors;
  f.bytes_in = before_.bytes_received + last_.bytes_received;
  f.bytes_acked = delivered_;
  return f;
}

std::string LinkHealth::sick(double other_bps, bool judge_goodput) const {
  const Window w = window();
  if (w.span_s < seconds(params_.window) / 2) return "";  // too little since the link (re)started
  const std::string over = " over " + std::to_string(params_.window.count()) + " ms";
  if (judge_goodput && params_.goodput_ratio > 0 && healthy_in_bps_ > 0 &&
      w.busy_in_s >= kBusyShare * w.span_s) {
    const double got = w.in_bps();
    if (got < params_.goodput_ratio * healthy_in_bps_ && (other_bps <= 0 || got < other_bps))
      return "frames arrived at " + gbps(got) + " Gbit/s" + over + ", " +
             std::to_string(static_cast<int>(100 * got / healthy_in_bps_)) + "% of its healthy " +
             gbps(healthy_in_bps_) + " Gbit/s";
  }
  if (lossy(w))
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
             std::to_string(kRttSamples) + " times in a row while idle (at least " +
             std::to_string(static_cast<int>(least / 1000)) + " ms, smallest seen " +
             std::to_string(static_cast<int>(min_rtt_us_)) + " us)";
  }
  return "";
}

}  // namespace hcomm::failover
