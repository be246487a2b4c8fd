#include "failover/link_probe.hpp"

#include <algorithm>
#include <cstdio>

namespace hcomm::failover {
namespace {

double seconds(LinkProbe::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

void keep(std::deque<double>& rounds, double bps) {
  rounds.push_back(bps);
  if (rounds.size() > LinkProbe::kKeepRounds) rounds.pop_front();
}

double best(const std::deque<double>& rounds) {
  return rounds.empty() ? 0 : *std::max_element(rounds.begin(), rounds.end());
}

}  // namespace

void LinkProbe::aim(int target, int reference) {
  if (target == target_ && reference == reference_) return;
  target_ = target;
  reference_ = reference;
  out_.reset();
  rounds_ = 0;
  target_bps_.clear();
  reference_bps_.clear();
  last_end_ = {};
}

std::optional<LinkProbe::Start> LinkProbe::next(Clock::time_point now) {
  if (target_ == kNoSlot || out_) return std::nullopt;
  if (last_end_ != Clock::time_point{} && now - last_end_ < params_.interval) return std::nullopt;
  // The reference first (a target round needs one to be judged), then every kReferenceEvery.
  const bool reference =
      reference_ != kNoSlot && (reference_bps_.empty() || rounds_ % kReferenceEvery == 0);
  Round r;
  r.id = next_id_++;
  r.slot = reference ? reference_ : target_;
  r.start = now;
  out_ = r;
  ++rounds_;
  return Start{r.slot, r.id, params_.bytes};
}

std::optional<LinkProbe::Verdict> LinkProbe::on_echo(int slot, uint64_t round, uint64_t bytes,
                                                     Clock::time_point now,
                                                     double target_healthy_bps,
                                                     Measured* measured) {
  if (!out_ || out_->id != round || out_->slot != slot) return std::nullopt;
  out_->got += bytes;
  if (out_->got < params_.bytes) return std::nullopt;
  const double elapsed = std::max(1e-6, seconds(now - out_->start));
  const double bps = 2.0 * static_cast<double>(params_.bytes) / elapsed;
  const int on = out_->slot;
  out_.reset();
  last_end_ = now;
  if (measured != nullptr) *measured = {on, bps};
  if (on != target_) {
    keep(reference_bps_, bps);
    return std::nullopt;
  }
  return judge(on, bps, target_healthy_bps, "");
}

LinkProbe::Verdict LinkProbe::judge(int slot, double bps, double target_healthy_bps,
                                    std::string why) {
  keep(target_bps_, bps);
  Verdict v;
  v.slot = slot;
  v.bps = bps;
  v.best_bps = best(target_bps_);
  v.reference_bps = best(reference_bps_);
  const bool own = target_healthy_bps > 0 && target_healthy_bps < v.reference_bps;
  if (own) v.reference_bps = target_healthy_bps;
  v.passed = v.reference_bps > 0 && v.best_bps >= params_.pass_ratio * v.reference_bps;
  char text[160];
  std::snprintf(text, sizeof(text), "best of its last rounds %.2f of %s (%.3g against %.3g Gbit/s)",
                v.reference_bps > 0 ? v.best_bps / v.reference_bps : 0.0,
                own ? "its own healthy goodput" : "the reference's", v.best_bps * 8 / 1e9,
                v.reference_bps * 8 / 1e9);
  v.why = why.empty() ? text : why + "; " + text;
  return v;
}

std::optional<LinkProbe::Verdict> LinkProbe::check_timeout(Clock::time_point now,
                                                           double target_healthy_bps) {
  if (!out_ || now - out_->start < params_.timeout) return std::nullopt;
  const Round r = *out_;
  out_.reset();
  last_end_ = now;
  if (r.slot != target_) return std::nullopt;
  return judge(r.slot, 0, target_healthy_bps,
               "not echoed within " + std::to_string(params_.timeout.count()) + " ms");
}

}  // namespace hcomm::failover
