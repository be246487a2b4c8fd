// The pure failover classes with a fake clock: KeepaliveDetector (timeout, phi accrual), Backoff,
// RestartIntensity, DeliveryWindow, and LinkSupervisor's decisions (redial after backoff,
// fail-back, pinning after too many failovers, peer lost, stale events and timers).
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "failover/backoff.hpp"
#include "failover/delivery_window.hpp"
#include "failover/keepalive_detector.hpp"
#include "failover/link_supervisor.hpp"
#include "failover/restart_intensity.hpp"

using hcomm::failover::Backoff;
using hcomm::failover::ChannelEvent;
using hcomm::failover::DeliveryWindow;
using hcomm::failover::KeepaliveDetector;
using hcomm::failover::kFallback;
using hcomm::failover::kNoSlot;
using hcomm::failover::kPrimary;
using hcomm::failover::LinkSupervisor;
using hcomm::failover::RestartIntensity;
using hcomm::failover::SupervisorCommand;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;
using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

Clock::time_point at(int64_t ms) {
  return Clock::time_point{} + std::chrono::milliseconds(ms);
}

ChannelEvent event(ChannelEvent::Kind kind, int8_t slot, uint64_t epoch, int8_t from = kNoSlot,
                   int64_t silent_ms = 0) {
  ChannelEvent e;
  e.peer = 1;
  e.kind = kind;
  e.slot = slot;
  e.from = from;
  e.epoch = epoch;
  e.silent_ms = silent_ms;
  return e;
}
ChannelEvent up(int8_t slot, uint64_t epoch) {
  return event(ChannelEvent::Kind::up, slot, epoch);
}
ChannelEvent down(int8_t slot, uint64_t epoch, int64_t silent_ms = 0) {
  return event(ChannelEvent::Kind::down, slot, epoch, kNoSlot, silent_ms);
}
ChannelEvent switched(int8_t to, int8_t from) {
  return event(ChannelEvent::Kind::switched, to, 0, from);
}
ChannelEvent redial_failed(int8_t slot, uint64_t epoch) {
  return event(ChannelEvent::Kind::redial_failed, slot, epoch);
}
ChannelEvent gray_down(int8_t slot, uint64_t epoch) {
  ChannelEvent e = down(slot, epoch);
  e.gray = true;
  return e;
}
/// A probe round of `slot`'s link number `epoch` ended.
ChannelEvent probe(int8_t slot, uint64_t epoch, bool passed) {
  ChannelEvent e = event(ChannelEvent::Kind::probe, slot, epoch);
  e.passed = passed;
  e.reason = passed ? "0.93 of the reference's goodput" : "0.01 of the reference's goodput";
  return e;
}

LinkSupervisor::Params params(bool coordinator) {
  LinkSupervisor::Params p;
  p.coordinator = coordinator;  // the rest: failback 600, peer timeout 5000, reconnect 100..2000
  return p;
}

/// Both links up at 0 and traffic on the primary; none of it asks for anything.
void start(LinkSupervisor& s) {
  for (const auto& e : {up(kPrimary, 1), up(kFallback, 1), switched(kPrimary, kNoSlot)}) {
    const auto out = s.on_event(e, at(0));
    CHECK(out.commands.empty());
    CHECK(out.timers.empty());
  }
  CHECK(s.active() == kPrimary);
}

void check_within(Clock::time_point when, int64_t lo, int64_t hi) {
  CHECK(when >= at(lo));
  CHECK(when <= at(hi));
}

/// The one timer of `out`, checked to lie in [lo, hi] ms.
LinkSupervisor::Timer one_timer(const LinkSupervisor::Output& out, int64_t lo, int64_t hi) {
  REQUIRE(out.timers.size() == 1);
  check_within(out.timers[0].when, lo, hi);
  return out.timers[0];
}

void check_command(const LinkSupervisor::Output& out, SupervisorCommand::Kind kind, int8_t slot,
                   uint64_t epoch = 0) {
  REQUIRE(out.commands.size() == 1);
  CHECK(out.commands[0].kind == kind);
  CHECK(out.commands[0].slot == slot);
  CHECK(out.commands[0].epoch == epoch);
}

/// `out`'s two timers: a redial in [lo, hi] ms, then the peer-lost deadline at `lost` ms.
std::pair<LinkSupervisor::Timer, LinkSupervisor::Timer> redial_and_lost(
    const LinkSupervisor::Output& out, int64_t lo, int64_t hi, int64_t lost) {
  REQUIRE(out.timers.size() == 2);
  const bool lost_first = out.timers[0].when == at(lost);
  const auto& redial = out.timers[lost_first ? 1 : 0];
  const auto& deadline = out.timers[lost_first ? 0 : 1];
  check_within(redial.when, lo, hi);
  CHECK(deadline.when == at(lost));
  return {redial, deadline};
}

bool nothing(const LinkSupervisor::Output& out) {
  return out.commands.empty() && out.timers.empty() && !out.pinned;
}

}  // namespace

TEST_CASE("failover: the keep-alive detector declares a link dead once silent for the timeout") {
  KeepaliveDetector d(100ms, 1000ms, 0);  // the timeout alone
  d.reset(at(0));
  CHECK(d.last_heard() == at(0));
  CHECK_FALSE(d.dead(at(999)));
  CHECK(d.dead(at(1000)));
  d.heard(at(500));
  CHECK(d.last_heard() == at(500));
  CHECK(d.silence(at(1200)) == 700ms);
  CHECK_FALSE(d.dead(at(1499)));
  CHECK(d.dead(at(1500)));
  // Regular heartbeats give phi a value, but without a threshold only the timeout counts.
  d.reset(at(2000));
  for (int t = 2100; t <= 3000; t += 100) d.heard(at(t));
  CHECK(d.phi(at(3300)) > 8);
  CHECK_FALSE(d.dead(at(3999)));
  CHECK(d.dead(at(4000)));
}

TEST_CASE("failover: the keep-alive detector's phi needs eight heartbeat gaps and adapts to them") {
  KeepaliveDetector d(100ms, 1000ms, 8.0);
  d.reset(at(0));
  for (int t = 100; t <= 700; t += 100) d.heard(at(t));  // 7 gaps of 100 ms
  // A burst (frames less than half an interval apart) is one arrival, not seven samples.
  for (int t = 705; t <= 745; t += 5) d.heard(at(t));
  CHECK(d.last_heard() == at(745));
  CHECK(d.phi(at(1245)) == 0);
  CHECK_FALSE(d.dead(at(1245)));

  d.heard(at(800));  // the 8th gap: mean 100 ms, deviation floored at 25 ms
  CHECK(d.phi(at(900)) == doctest::Approx(std::log10(2.0)).epsilon(1e-6));  // a gap of the mean
  CHECK(d.phi(at(1000)) == doctest::Approx(4.4993).epsilon(1e-3));          // 4 deviations
  CHECK_FALSE(d.dead(at(1030)));  // 5.2 deviations: phi 7.0
  CHECK(d.dead(at(1050)));        // 6 deviations: phi 9.0, long before the 1000 ms timeout

  // A restarted link forgets the gaps seen so far.
  d.reset(at(2000));
  CHECK(d.last_heard() == at(2000));
  CHECK(d.phi(at(2500)) == 0);
  CHECK_FALSE(d.dead(at(2500)));
  CHECK(d.dead(at(3000)));

  // An irregular peer (gaps of 60 and 140 ms: deviation 40 ms) is not suspected as soon.
  KeepaliveDetector irregular(100ms, 1000ms, 8.0);
  irregular.reset(at(0));
  int t = 0;
  for (int i = 0; i < 8; ++i) irregular.heard(at(t += i % 2 == 0 ? 60 : 140));
  CHECK(t == 800);
  CHECK(irregular.phi(at(1050)) == doctest::Approx(4.05).epsilon(1e-2));  // 3.75 deviations
  CHECK_FALSE(irregular.dead(at(1050)));
}

TEST_CASE("failover: backoff stays within [d/2, d] while d doubles from min up to max") {
  const std::vector<int64_t> steps = {100, 200, 400, 800, 1000, 1000};
  std::vector<int64_t> lowest(steps.size(), 1 << 30), highest(steps.size(), 0);
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Backoff b(100ms, 1000ms, seed);
    for (size_t i = 0; i < steps.size(); ++i) {
      const int64_t w = b.next().count();
      check_within(at(w), steps[i] / 2, steps[i]);
      lowest[i] = std::min(lowest[i], w);
      highest[i] = std::max(highest[i], w);
    }
  }
  // The jitter spreads over the whole range, so the ranks do not retry in lockstep.
  for (size_t i = 0; i < steps.size(); ++i) {
    CHECK(lowest[i] < steps[i] * 6 / 10);
    CHECK(highest[i] > steps[i] * 9 / 10);
  }

  SUBCASE("the same seed gives the same waits; reset starts from min again") {
    Backoff a(100ms, 1000ms, 7), b(100ms, 1000ms, 7);
    for (int i = 0; i < 6; ++i) CHECK(a.next() == b.next());
    a.reset();
    check_within(at(a.next().count()), 50, 100);
    check_within(at(a.next().count()), 100, 200);
  }
}

TEST_CASE("failover: restart intensity passes after more than max restarts within the period") {
  RestartIntensity r(2, 1000ms);
  CHECK(r.max() == 2);
  CHECK(r.period() == 1000ms);
  CHECK_FALSE(r.record(at(0)));
  CHECK_FALSE(r.record(at(500)));
  CHECK(r.record(at(1000)));  // 0, 500, 1000: three within 1000 ms (the edge counts)

  RestartIntensity spread(2, 1000ms);
  CHECK_FALSE(spread.record(at(0)));
  CHECK_FALSE(spread.record(at(500)));
  CHECK_FALSE(spread.record(at(1001)));  // 0 has left the period
  CHECK(spread.record(at(1400)));        // 500, 1001, 1400
  CHECK_FALSE(spread.record(at(5000)));  // all others have left

  RestartIntensity none(0, 1000ms);
  CHECK(none.record(at(0)));
}

TEST_CASE("failover: the delivery window keeps a cumulative point and ranges above it") {
  DeliveryWindow w;
  CHECK(w.cumulative() == 0);
  CHECK_FALSE(w.delivered(1));
  CHECK(w.ranges(8).empty());

  for (uint64_t s : {5, 7, 8, 10, 11, 12, 14}) w.mark(s);
  CHECK(w.cumulative() == 0);
  CHECK(w.ranges(8) == Ranges{{5, 5}, {7, 8}, {10, 12}, {14, 14}});
  CHECK(w.ranges(2) == Ranges{{5, 5}, {7, 8}});
  CHECK(w.ranges(0).empty());
  CHECK(w.delivered(7));
  CHECK_FALSE(w.delivered(6));
  CHECK_FALSE(w.delivered(13));

  w.mark(1);
  CHECK(w.cumulative() == 1);
  w.mark(3);
  w.mark(2);
  CHECK(w.cumulative() == 3);
  w.mark(4);  // joins 5
  CHECK(w.cumulative() == 5);
  CHECK(w.ranges(8) == Ranges{{7, 8}, {10, 12}, {14, 14}});
  w.mark(6);  // joins 7 and 8
  CHECK(w.cumulative() == 8);
  CHECK(w.ranges(1) == Ranges{{10, 12}});

  // Idempotent: marking again changes nothing.
  w.mark(3);
  w.mark(11);
  CHECK(w.cumulative() == 8);
  CHECK(w.ranges(8) == Ranges{{10, 12}, {14, 14}});
  w.mark(9);
  w.mark(13);
  CHECK(w.cumulative() == 14);
  CHECK(w.ranges(8).empty());
  CHECK(w.delivered(14));
  CHECK_FALSE(w.delivered(15));
}

TEST_CASE("failover: the supervisor redials a link that went down after a doubling backoff") {
  LinkSupervisor s(params(false));
  start(s);

  auto out = s.on_event(down(kPrimary, 1, 40), at(1000));
  CHECK(out.commands.empty());
  auto t = one_timer(out, 1050, 1100);  // the fallback is up: no peer-lost deadline
  check_command(s.on_timer(t.token, t.when), SupervisorCommand::Kind::redial, kPrimary);

  t = one_timer(s.on_event(redial_failed(kPrimary, 2), at(1200)), 1300, 1400);
  check_command(s.on_timer(t.token, t.when), SupervisorCommand::Kind::redial, kPrimary);
  t = one_timer(s.on_event(redial_failed(kPrimary, 3), at(1500)), 1700, 1900);
  check_command(s.on_timer(t.token, t.when), SupervisorCommand::Kind::redial, kPrimary);

  // Up again: the next failure starts from the minimum once more.
  CHECK(nothing(s.on_event(up(kPrimary, 4), at(2000))));
  t = one_timer(s.on_event(down(kPrimary, 4), at(3000)), 3050, 3100);

  SUBCASE("a redial timer is stale once the link is up or a newer one was set") {
    auto newer = one_timer(s.on_event(redial_failed(kPrimary, 5), at(3020)), 3120, 3220);
    CHECK(nothing(s.on_timer(t.token, t.when)));  // superseded by the newer timer
    CHECK(nothing(s.on_event(up(kPrimary, 5), at(3100))));
    CHECK(nothing(s.on_timer(newer.token, newer.when)));  // the link is up already
  }
  SUBCASE("the fallback is redialled the same way; with both down the peer gets a deadline") {
    auto f = redial_and_lost(s.on_event(down(kFallback, 1), at(3010)), 3060, 3110, 8010).first;
    check_command(s.on_timer(f.token, f.when), SupervisorCommand::Kind::redial, kFallback);
    check_command(s.on_timer(t.token, t.when), SupervisorCommand::Kind::redial, kPrimary);
  }
}

TEST_CASE("failover: the supervisor does not redial a primary that cannot be made again") {
  auto p = params(false);
  p.primary_redials = false;
  LinkSupervisor s(p);
  start(s);
  CHECK(nothing(s.on_event(down(kPrimary, 1), at(1000))));
  CHECK(nothing(s.on_event(redial_failed(kPrimary, 2), at(1100))));
  // Both down: a redial of the fallback and the peer-lost deadline.
  auto r = redial_and_lost(s.on_event(down(kFallback, 1, 0), at(2000)), 2050, 2100, 7000).first;
  check_command(s.on_timer(r.token, r.when), SupervisorCommand::Kind::redial, kFallback);
}

TEST_CASE("failover: the coordinating supervisor fails back once the probe passed long enough") {
  LinkSupervisor s(params(true));
  start(s);
  auto r = one_timer(s.on_event(down(kPrimary, 1, 40), at(1000)), 1050, 1100);
  CHECK(nothing(s.on_event(switched(kFallback, kPrimary), at(1000))));  // 1 failover: not pinned
  CHECK(s.active() == kFallback);
  check_command(s.on_timer(r.token, r.when), SupervisorCommand::Kind::redial, kPrimary);

  // The primary is up again: heartbeats are not enough, its data path is probed.
  auto out = s.on_event(up(kPrimary, 2), at(1300));
  check_command(out, SupervisorCommand::Kind::probe, kPrimary);
  CHECK(out.timers.empty());

  SUBCASE("every round passing for failback_after: traffic moves to the primary's current link") {
    for (int64_t t = 1400; t < 2000; t += 100)
      CHECK(nothing(s.on_event(probe(kPrimary, 2, true), at(t))));
    out = s.on_event(probe(kPrimary, 2, true), at(2000));
    check_command(out, SupervisorCommand::Kind::activate, kPrimary, 2);
    CHECK(out.commands[0].reason.find("600 ms") != std::string::npos);
    CHECK(out.commands[0].reason.find("0.93") != std::string::npos);
    // On the primary: the probe stops.
    check_command(s.on_event(switched(kPrimary, kFallback), at(2010)),
                  SupervisorCommand::Kind::probe, kNoSlot);
  }
  SUBCASE("a failed round starts the wait over") {
    CHECK(nothing(s.on_event(probe(kPrimary, 2, true), at(1400))));
    CHECK(nothing(s.on_event(probe(kPrimary, 2, true), at(1500))));
    CHECK(nothing(s.on_event(probe(kPrimary, 2, false), at(1600))));
    for (int64_t t = 1700; t < 2300; t += 100)
      CHECK(nothing(s.on_event(probe(kPrimary, 2, true), at(t))));
    check_command(s.on_event(probe(kPrimary, 2, true), at(2300)), SupervisorCommand::Kind::activate,
                  kPrimary, 2);
  }
  SUBCASE("not when the primary went down meanwhile, nor for an older primary link") {
    out = s.on_event(down(kPrimary, 2), at(1500));
    check_command(out, SupervisorCommand::Kind::probe, kNoSlot);  // nothing to probe
    r = one_timer(out, 1550, 1600);
    CHECK(nothing(s.on_event(probe(kPrimary, 2, true), at(1550))));
    check_command(s.on_timer(r.token, r.when), SupervisorCommand::Kind::redial, kPrimary);
    check_command(s.on_event(up(kPrimary, 3), at(1700)), SupervisorCommand::Kind::probe, kPrimary);
    for (int64_t t = 1800; t <= 2400; t += 100) {
      CHECK(nothing(s.on_event(probe(kPrimary, 2, true), at(t))));  // link 2's, stale
      if (t < 2400) CHECK(nothing(s.on_event(probe(kPrimary, 3, true), at(t))));
    }
    check_command(s.on_event(probe(kPrimary, 3, true), at(2400)), SupervisorCommand::Kind::activate,
                  kPrimary, 3);
  }
  SUBCASE("traffic moving back by itself stops the probe; moving off again restarts it") {
    check_command(s.on_event(switched(kPrimary, kFallback), at(1600)),
                  SupervisorCommand::Kind::probe, kNoSlot);
    CHECK(nothing(s.on_event(probe(kPrimary, 2, true), at(1700))));
    check_command(s.on_event(switched(kFallback, kPrimary), at(1800)),
                  SupervisorCommand::Kind::probe, kPrimary);
  }
}

TEST_CASE("failover: after a gray failure the fail-back waits out a hold that doubles") {
  auto p = params(true);
  p.gray_hold = 1000ms;
  LinkSupervisor s(p);
  start(s);
  uint64_t epoch = 1;
  // A gray failure at `t`, the primary up again at t + 200 and passing every round from then:
  // when does the fail-back come?
  auto fail_back_after_gray = [&](int64_t t) {
    one_timer(s.on_event(gray_down(kPrimary, epoch), at(t)), t + 50, t + 100);
    s.on_event(switched(kFallback, kPrimary), at(t));
    ++epoch;
    check_command(s.on_event(up(kPrimary, epoch), at(t + 200)), SupervisorCommand::Kind::probe,
                  kPrimary);
    for (int64_t at_ms = t + 300;; at_ms += 100) {
      auto out = s.on_event(probe(kPrimary, epoch, true), at(at_ms));
      if (!out.commands.empty()) {
        check_command(out, SupervisorCommand::Kind::activate, kPrimary, epoch);
        s.on_event(switched(kPrimary, kFallback), at(at_ms));
        return at_ms - t;
      }
      REQUIRE(at_ms < t + 20000);
    }
  };
  CHECK(fail_back_after_gray(1000) == 1000);  // the hold, longer than the 600 ms of passing
  CHECK(fail_back_after_gray(3000) == 2000);
  CHECK(fail_back_after_gray(6000) == 4000);
  // Past the failover window (30 s) the hold is back to one.
  CHECK(fail_back_after_gray(50000) == 1000);
}

TEST_CASE("failover: under multi-path a fallback made again is admitted after passing the probe") {
  auto p = params(true);
  p.multipath = true;
  LinkSupervisor s(p);
  start(s);
  auto r = one_timer(s.on_event(gray_down(kFallback, 1), at(1000)), 1050, 1100);
  check_command(s.on_timer(r.token, r.when), SupervisorCommand::Kind::redial, kFallback);
  check_command(s.on_event(up(kFallback, 2), at(1200)), SupervisorCommand::Kind::probe, kFallback);
  for (int64_t t = 1300; t < 1900; t += 100)
    CHECK(nothing(s.on_event(probe(kFallback, 2, true), at(t))));
  // The hold of its gray failure (1000 ms from 1000) has passed too.
  auto out = s.on_event(probe(kFallback, 2, true), at(2000));
  REQUIRE(out.commands.size() == 2);
  CHECK(out.commands[0].kind == SupervisorCommand::Kind::admit);
  CHECK(out.commands[0].slot == kFallback);
  CHECK(out.commands[0].epoch == 2);
  CHECK(out.commands[1].kind == SupervisorCommand::Kind::probe);
  CHECK(out.commands[1].slot == kNoSlot);

  SUBCASE("without multi-path a fallback made again is not probed") {
    LinkSupervisor single(params(true));
    start(single);
    single.on_event(down(kFallback, 1), at(1000));
    CHECK(single.on_event(up(kFallback, 2), at(1200)).commands.empty());
  }
}

TEST_CASE("failover: a supervisor that does not coordinate never fails back by itself") {
  LinkSupervisor s(params(false));
  start(s);
  one_timer(s.on_event(down(kPrimary, 1), at(1000)), 1050, 1100);
  CHECK(nothing(s.on_event(switched(kFallback, kPrimary), at(1000))));
  CHECK(nothing(s.on_event(up(kPrimary, 2), at(1300))));
  CHECK(nothing(s.on_event(switched(kPrimary, kFallback), at(1400))));  // it follows the peer
  CHECK(s.active() == kPrimary);
}

TEST_CASE("failover: the supervisor pins the peer to its fallback after too many failovers") {
  auto p = params(true);
  p.failover_limit = 2;
  p.failover_window = 10000ms;
  LinkSupervisor s(p);
  start(s);
  uint64_t epoch = 1;
  // One failover at `t`, then back on a new primary link 500 ms later.
  auto fail_over = [&](int64_t t) {
    auto redial = one_timer(s.on_event(down(kPrimary, epoch, 30), at(t)), t + 50, t + 100);
    auto out = s.on_event(switched(kFallback, kPrimary), at(t));
    CHECK(out.commands.empty());  // nothing to probe: the primary is down
    return std::make_pair(out, redial);
  };
  auto fail_back = [&](int64_t t) {
    ++epoch;
    check_command(s.on_event(up(kPrimary, epoch), at(t)), SupervisorCommand::Kind::probe, kPrimary);
    for (int64_t at_ms = t; at_ms < t + 600; at_ms += 100)
      CHECK(nothing(s.on_event(probe(kPrimary, epoch, true), at(at_ms))));
    check_command(s.on_event(probe(kPrimary, epoch, true), at(t + 600)),
                  SupervisorCommand::Kind::activate, kPrimary, epoch);
    check_command(s.on_event(switched(kPrimary, kFallback), at(t + 600)),
                  SupervisorCommand::Kind::probe, kNoSlot);
  };

  SUBCASE("failovers spread over more than the window never pin") {
    for (int64_t t : {0, 6000, 12000, 18000}) {
      CHECK_FALSE(fail_over(t + 1000).first.pinned);
      fail_back(t + 1500);
    }
    CHECK_FALSE(s.pinned());
    CHECK(fail_over(21000).first.pinned);  // 13000, 19000, 21000
  }
  SUBCASE("the third failover within the window pins, and the primary is left alone") {
    CHECK_FALSE(fail_over(1000).first.pinned);
    fail_back(1500);
    CHECK_FALSE(fail_over(3000).first.pinned);
    fail_back(3500);
    auto [out, redial] = fail_over(5000);
    CHECK(out.pinned);
    CHECK(out.timers.empty());
    CHECK(s.pinned());
    CHECK(s.active() == kFallback);
    CHECK(nothing(s.on_timer(redial.token, redial.when)));  // the pending redial is called off
    CHECK(nothing(s.on_event(redial_failed(kPrimary, epoch + 1), at(5200))));
    CHECK(nothing(s.on_event(up(kPrimary, epoch + 1), at(5300))));  // no probe, no fail-back
    CHECK(nothing(s.on_event(probe(kPrimary, epoch + 1, true), at(6000))));
    CHECK(nothing(s.on_event(down(kPrimary, epoch + 1), at(5400))));  // no redial
    CHECK(nothing(s.on_event(up(kPrimary, epoch + 2), at(5450))));
    // Pinned once: a later failover does not report it again.
    CHECK(nothing(s.on_event(switched(kFallback, kPrimary), at(5500))));
    // The fallback is still made again when it goes.
    auto f = one_timer(s.on_event(down(kFallback, 1), at(6000)), 6050, 6100);
    check_command(s.on_timer(f.token, f.when), SupervisorCommand::Kind::redial, kFallback);
    CHECK(s.pinned());
  }
  SUBCASE("pinning calls off a fail-back that was waiting, whatever the order of the reports") {
    fail_over(1000);
    fail_back(1500);
    fail_over(3000);
    check_command(s.on_event(up(kPrimary, ++epoch), at(3500)), SupervisorCommand::Kind::probe,
                  kPrimary);
    // The fallback failed: traffic is on the primary, nothing to probe.
    check_command(s.on_event(switched(kPrimary, kFallback), at(3600)),
                  SupervisorCommand::Kind::probe, kNoSlot);
    auto out = s.on_event(switched(kFallback, kPrimary), at(3700));  // before the primary's down
    CHECK(out.pinned);
    CHECK(out.commands.empty());  // pinned: the primary is not probed
    for (int64_t t = 3800; t <= 5000; t += 100)
      CHECK(nothing(s.on_event(probe(kPrimary, epoch, true), at(t))));
  }
}

TEST_CASE("failover: the supervisor declares the peer lost when no link is up by its deadline") {
  LinkSupervisor s(params(false));
  start(s);
  auto rf = one_timer(s.on_event(down(kFallback, 1), at(1000)), 1050, 1100);
  auto out = s.on_event(down(kPrimary, 1, 300), at(2000));
  CHECK(out.commands.empty());
  // One redial of the primary, and the deadline: last sign of life (1700) + 5000 ms.
  const auto [rp, lost] = redial_and_lost(out, 2050, 2100, 6700);

  SUBCASE("no link came back: declared lost, and nothing more is decided") {
    check_command(s.on_timer(rp.token, rp.when), SupervisorCommand::Kind::redial, kPrimary);
    out = s.on_timer(lost.token, lost.when);
    check_command(out, SupervisorCommand::Kind::declare_lost, kNoSlot);
    CHECK(out.commands[0].reason.find("5000") != std::string::npos);
    CHECK(s.lost());
    CHECK(nothing(s.on_event(down(kPrimary, 2), at(6900))));
    CHECK(nothing(s.on_timer(rf.token, rf.when)));
    CHECK(nothing(s.on_timer(lost.token, lost.when)));
    // A link that came back just before the loss was carried out makes the ReliableLink decline
    // it and report the link up: that undoes the decision, and supervision goes on.
    s.on_event(up(kPrimary, 3), at(7000));
    CHECK_FALSE(s.lost());
    CHECK_FALSE(nothing(s.on_event(down(kPrimary, 3), at(7100))));
  }
  SUBCASE("a link that comes back before the deadline keeps the peer") {
    CHECK(nothing(s.on_event(up(kFallback, 2), at(4000))));
    CHECK(nothing(s.on_timer(lost.token, lost.when)));
    CHECK_FALSE(s.lost());
    SUBCASE("and going down again sets a new deadline from the new last sign of life") {
      const auto lost2 =
          redial_and_lost(s.on_event(down(kFallback, 2, 100), at(5000)), 5050, 5100, 9900).second;
      CHECK(nothing(s.on_timer(lost.token, lost.when)));  // the old deadline is stale
      check_command(s.on_timer(lost2.token, lost2.when), SupervisorCommand::Kind::declare_lost,
                    kNoSlot);
      CHECK(s.lost());
    }
  }
  SUBCASE("an older link's down does not take the new link down") {
    CHECK(nothing(s.on_event(up(kPrimary, 2), at(3000))));
    CHECK(nothing(s.on_event(down(kPrimary, 1, 0), at(3100))));  // stale: no redial, no deadline
    CHECK(nothing(s.on_timer(lost.token, lost.when)));
    CHECK(nothing(s.on_timer(rp.token, rp.when)));  // the primary is up
    // The fallback is still down and being redialled; the primary is up: no deadline.
    one_timer(s.on_event(redial_failed(kFallback, 2), at(7000)), 7100, 7200);
    CHECK_FALSE(s.lost());
  }
}
