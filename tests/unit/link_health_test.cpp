// Link health and probes as pure logic (failover/link_health.hpp, failover/link_probe.hpp), fed
// made-up counters and times: when a link counts as sick (goodput in against its healthy
// figure, the medium's loss, idle round trips), what survives a new link, delivery-rate samples
// for planning; probe rounds, their reference and their verdicts, the peer's echo.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "failover/link_health.hpp"
#include "failover/link_probe.hpp"

using hcomm::failover::DeliveryStamp;
using hcomm::failover::GrayParams;
using hcomm::failover::kFallback;
using hcomm::failover::kNoSlot;
using hcomm::failover::kPrimary;
using hcomm::failover::LinkHealth;
using hcomm::failover::LinkProbe;
using hcomm::failover::ProbeEcho;
using hcomm::failover::ProbeParams;
using hcomm::transport::MediumCounters;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;
const Clock::time_point t0 = Clock::time_point{} + 1h;

/// A link's counters moved on tick by tick (50 ms each): what arrived and for how long.
struct Feed {
  LinkHealth& health;
  MediumCounters c;
  Clock::time_point now = t0;

  /// `ticks` ticks during which frames arrived `busy` of the time at `bytes_per_s` while
  /// arriving, and the medium sent `packets` packets a tick, `resent` of them again.
  void run(int ticks, double bytes_per_s, double busy = 1.0, uint64_t packets = 0,
           uint64_t resent = 0) {
    for (int i = 0; i < ticks; ++i) {
      now += 50ms;
      const double busy_s = 0.05 * busy;
      c.receiving_us += static_cast<uint64_t>(busy_s * 1e6);
      c.bytes_received += static_cast<uint64_t>(busy_s * bytes_per_s);
      c.valid = packets > 0 || c.valid;
      c.packets_sent += packets;
      c.retransmits += resent;
      health.on_medium(c);
      health.tick(now);
    }
  }
};

}  // namespace

TEST_CASE("link health: frames arriving far below the link's healthy rate make it sick") {
  LinkHealth h(GrayParams{});
  Feed feed{h, {}};
  feed.run(10, 1e9);  // healthy: 1 GB/s while frames arrive
  CHECK(h.healthy_in_bps() == doctest::Approx(1e9).epsilon(0.01));
  CHECK(h.sick(0).empty());

  SUBCASE("the peer sending the whole window at 1% of it: sick, naming the rates") {
    feed.run(7, 1e7);
    const std::string why = h.sick(0);
    CHECK(why.find("frames arrived at 0.08 Gbit/s") != std::string::npos);
    CHECK(why.find("1% of its healthy 8 Gbit/s") != std::string::npos);
    // Not when the other link is known to offer even less, nor when the peer paces itself.
    CHECK(h.sick(5e6).empty());
    CHECK(h.sick(0, /*judge_goodput=*/false).empty());
    // The healthy figure is not lowered by the sick windows.
    CHECK(h.healthy_in_bps() == doctest::Approx(1e9).epsilon(0.01));
  }
  SUBCASE("at 30% of it: not sick (the threshold is 25%)") {
    feed.run(7, 3e8);
    CHECK(h.sick(0).empty());
  }
  SUBCASE("slow arrivals during only part of the window say nothing (the peer was idle)") {
    feed.run(7, 1e7, /*busy=*/0.5);
    CHECK(h.sick(0).empty());
  }
  SUBCASE("a new link starts a fresh window and keeps the healthy figure") {
    feed.run(7, 1e7);
    REQUIRE_FALSE(h.sick(0).empty());
    h.restart();
    feed.c = {};  // the new link counts from 0
    feed.run(1, 1e7);
    CHECK(h.sick(0).empty());  // too little history yet
    feed.run(6, 1e7);
    CHECK_FALSE(h.sick(0).empty());
    CHECK(h.healthy_in_bps() == doctest::Approx(1e9).epsilon(0.01));
  }
  SUBCASE("a criterion set to 0 is off") {
    GrayParams off;
    off.goodput_ratio = 0;
    LinkHealth h2(off);
    Feed f2{h2, {}};
    f2.run(10, 1e9);
    f2.run(7, 1e6);
    CHECK(h2.sick(0).empty());
  }
}

TEST_CASE("link health: the medium resending a share of its packets over the window is sick") {
  LinkHealth h(GrayParams{});
  Feed feed{h, {}};
  feed.run(6, 1e9, 1.0, /*packets=*/1000, /*resent=*/10);  // 1%
  CHECK(h.sick(0).empty());
  feed.run(6, 1e9, 1.0, 1000, 150);  // 15%
  const std::string why = h.sick(0);
  CHECK(why.find("900 of 6000 packets resent over 300 ms (15% loss)") != std::string::npos);
  // Too few packets for a share to mean anything.
  LinkHealth few(GrayParams{});
  Feed f2{few, {}};
  f2.run(6, 1e9, 1.0, 30, 10);
  CHECK(few.sick(0).empty());
  CHECK(few.figures().loss == doctest::Approx(1.0 / 3));
}

TEST_CASE("link health: only round trips taken while neither side waited judge latency") {
  LinkHealth h(GrayParams{});
  Feed feed{h, {}};
  feed.run(6, 0, 0.0);  // a window of history, nothing arriving
  h.on_round_trip(1ms, /*idle=*/true);
  for (int i = 0; i < 4; ++i) h.on_round_trip(150ms, true);
  CHECK(h.sick(0).empty());       // four in a row
  h.on_round_trip(900ms, false);  // taken behind data: no say
  CHECK(h.sick(0).empty());
  h.on_round_trip(150ms, true);  // the fifth idle one
  const std::string why = h.sick(0);
  CHECK(why.find("round trip over 100 ms 5 times in a row while idle") != std::string::npos);
  CHECK(why.find("smallest seen 1000 us") != std::string::npos);
  CHECK(h.figures().min_rtt_us == doctest::Approx(1000));
  h.on_round_trip(2ms, true);  // one fast one breaks the row
  CHECK(h.sick(0).empty());
}

TEST_CASE("link health: delivery-rate samples of acknowledged frames set the planning rate") {
  LinkHealth h(GrayParams{});
  CHECK(h.planning_bps() == 0);
  h.on_probe(4e8);
  CHECK(h.planning_bps() == doctest::Approx(4e8));  // nothing better known
  // 1 MiB frames sent every 2 ms, each acknowledged 50 ms later (the acknowledgement waits
  // behind data going the other way): the link delivers 512 MiB/s, whatever that delay.
  constexpr int kFrames = 100;
  std::vector<DeliveryStamp> stamps;
  int acked = 0;
  for (int ms = 0; acked < kFrames; ++ms) {
    const Clock::time_point now = t0 + std::chrono::milliseconds(ms);
    while (acked < static_cast<int>(stamps.size()) && 2 * acked + 50 <= ms)
      h.on_acked(1 << 20, stamps[static_cast<size_t>(acked++)], now);
    if (ms % 2 == 0 && stamps.size() < kFrames) stamps.push_back(h.on_sent(1 << 20, now));
    if (ms % 50 == 0) h.tick(now);
  }
  CHECK(h.outstanding() == 0);
  CHECK(h.planning_bps() == doctest::Approx(double(1 << 20) / 0.002).epsilon(0.02));
  CHECK(h.figures().bytes_acked == uint64_t{kFrames} << 20);
  h.on_withdrawn(123);  // nothing waits: stays 0
  CHECK(h.outstanding() == 0);
}

TEST_CASE("link probe: a reference round first, then target rounds judged by the best of three") {
  ProbeParams p;
  p.bytes = 1 << 20;
  p.interval = 100ms;
  p.timeout = 800ms;
  LinkProbe probe(p);
  Clock::time_point now = t0;
  CHECK_FALSE(probe.next(now));  // not aimed
  probe.aim(kPrimary, kFallback);
  // Runs the next round, echoed `after` later; returns its verdict (none for a reference round).
  auto round = [&](int expect_slot, Clock::duration after) {
    auto start = probe.next(now);
    REQUIRE(start);
    CHECK(start->slot == expect_slot);
    CHECK(start->bytes == p.bytes);
    CHECK_FALSE(probe.next(now));  // one round out at a time
    now += after;
    LinkProbe::Measured m;
    CHECK_FALSE(probe.on_echo(start->slot, start->round, p.bytes / 2, now, 0, &m));  // half of it
    auto v = probe.on_echo(start->slot, start->round, p.bytes / 2, now, 0, &m);
    CHECK(m.slot == expect_slot);
    CHECK(m.bps == doctest::Approx(2.0 * p.bytes / std::chrono::duration<double>(after).count()));
    CHECK_FALSE(probe.next(now + 50ms));  // the interval
    now += p.interval;
    return v;
  };
  CHECK_FALSE(round(kFallback, 2ms));  // the reference: 2 MiB in 2 ms
  auto v = round(kPrimary, 40ms);      // 20x slower: fails
  REQUIRE(v);
  CHECK_FALSE(v->passed);
  CHECK(v->why.find("0.05 of the reference's") != std::string::npos);
  v = round(kPrimary, 4ms);  // half as fast: passes (at least 25% of the reference)
  CHECK(v->passed);
  v = round(kPrimary, 400ms);  // slow again, but the best of the last three still passes
  CHECK(v->passed);
  v = round(kPrimary, 400ms);
  CHECK(v->passed);
  CHECK_FALSE(round(kFallback, 2ms));  // every fifth round measures the reference again
  v = round(kPrimary, 400ms);          // the fast round is no longer among the last three
  CHECK_FALSE(v->passed);

  SUBCASE("a round not echoed within the timeout fails") {
    auto start = probe.next(now);
    REQUIRE(start);
    CHECK_FALSE(probe.check_timeout(now + 799ms, 0));
    auto late = probe.check_timeout(now + 800ms, 0);
    REQUIRE(late);
    CHECK_FALSE(late->passed);
    CHECK(late->why.find("not echoed within 800 ms") != std::string::npos);
    LinkProbe::Measured m;
    CHECK_FALSE(
        probe.on_echo(start->slot, start->round, p.bytes, now + 900ms, 0, &m));  // forgotten
  }
  SUBCASE("a target slower than the reference by nature is judged against its own healthy rate") {
    auto start = probe.next(now);
    REQUIRE(start);
    now += 400ms;  // as slow as the last rounds: 5.2 MB/s
    LinkProbe::Measured m;
    auto own = probe.on_echo(start->slot, start->round, p.bytes, now, /*healthy=*/8e6, &m);
    REQUIRE(own);
    CHECK(own->passed);  // 5.2 MB/s, at least a quarter of its own 8 MB/s
    CHECK(own->why.find("of its own healthy goodput") != std::string::npos);
  }
  SUBCASE("aiming elsewhere forgets the rounds; kNoSlot stops") {
    probe.aim(kFallback, kPrimary);
    auto start = probe.next(now);
    REQUIRE(start);
    CHECK(start->slot == kPrimary);  // a new reference first
    probe.aim(kNoSlot, kNoSlot);
    CHECK_FALSE(probe.next(now + 1s));
  }
}

TEST_CASE("probe echo: a round is echoed once all its pieces arrived, older rounds are ignored") {
  ProbeEcho echo;
  CHECK_FALSE(echo.on_piece(3, 64, 192));
  CHECK_FALSE(echo.on_piece(3, 64, 192));
  CHECK(echo.on_piece(3, 64, 192));
  CHECK_FALSE(echo.on_piece(2, 192, 192));  // older than the latest
  CHECK_FALSE(echo.on_piece(5, 100, 200));  // a newer round starts over
  CHECK(echo.on_piece(5, 100, 200));
  echo.reset();
  CHECK(echo.on_piece(1, 10, 10));  // a new link's rounds count from 1 again
}
