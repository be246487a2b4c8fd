// The reliable channel's multi-path, gray failures and probes on fake links
// (reliable_link_harness.hpp): large frames split between both links and each delivered once,
// a link failing with its share in flight, a frame half received on one link and sent again on
// the other, a fallback made again carrying large frames only once admitted; a link whose
// frames arrive far below its healthy rate failed while the other is healthy; the coordinator's
// probe rounds echoed by the peer and judged.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/unit/reliable_link_harness.hpp"

using hcomm::HCOMM_ERR_TRANSPORT;
using hcomm::failover::ChannelEvent;
using hcomm::failover::kFallback;
using hcomm::failover::kNoSlot;
using hcomm::failover::kPrimary;
using hcomm::failover::ReliableLinkParams;
using hcomm::failover::SupervisorCommand;
using hcomm::fake::check_delivered;
using hcomm::fake::check_sent;
using hcomm::fake::data_in;
using hcomm::fake::FakeLink;
using hcomm::fake::Harness;
using hcomm::fake::Recv;
using hcomm::fake::Send;
using hcomm::fake::WireFrame;
using namespace std::chrono_literals;

namespace {

constexpr size_t kLarge = 256 * 1024;

void multipath(ReliableLinkParams& p) {
  p.multipath = true;
  p.multipath_min_bytes = 64 * 1024;
}

/// `n` receives of `bytes` on `to` and the matching sends from the other rank, for operations
/// first..first+n-1 (receives in pieces every other one).
struct Transfers {
  std::vector<std::unique_ptr<Recv>> recvs;
  std::vector<std::unique_ptr<Send>> sends;
  void post_recvs(Harness& h, int to, uint64_t first, int n, size_t bytes) {
    for (int i = 0; i < n; ++i) {
      recvs.push_back(std::make_unique<Recv>(first + static_cast<uint64_t>(i), bytes, i % 2 == 1));
      h.link(to).post_recv(recvs.back().get());
    }
  }
  void post_sends(Harness& h, int from, uint64_t first, int n, size_t bytes) {
    for (int i = 0; i < n; ++i) {
      sends.push_back(std::make_unique<Send>(first + static_cast<uint64_t>(i), bytes));
      h.link(from).post_send(sends.back().get());
    }
  }
  void check_all() const {
    REQUIRE(recvs.size() == sends.size());
    for (size_t i = 0; i < recvs.size(); ++i) {
      CAPTURE(i);
      check_delivered(*recvs[i], *sends[i]);
      check_sent(*sends[i]);
    }
  }
};

size_t count_events(const Harness& h, int rank, ChannelEvent::Kind kind, int slot) {
  size_t n = 0;
  for (const ChannelEvent& e : h.rank[static_cast<size_t>(rank)].listener.events)
    if (e.kind == kind && e.slot == slot) ++n;
  return n;
}

}  // namespace

TEST_CASE("multi-path: large frames go on both links, each delivered once, the twin withdrawn") {
  Harness h(2, multipath);
  Transfers t;
  t.post_recvs(h, 1, 1, 8, kLarge);
  // Each large receive waits on both of rank 1's links.
  CHECK(h.net.link(kPrimary, 1)->posted() == 8);
  CHECK(h.net.link(kFallback, 1)->posted() == 8);
  Recv small_recv(100, 512, false);
  h.link(1).post_recv(&small_recv);
  CHECK(h.net.link(kFallback, 1)->posted() == 8);  // a small one only on the active link

  h.net.hold(kPrimary, 0);
  h.net.hold(kFallback, 0);
  t.post_sends(h, 0, 1, 8, kLarge);
  Send small_send(100, 512);
  h.link(0).post_send(&small_send);
  h.pump();
  // Neither link measured yet: their backlogs alone split the frames, half each; the small
  // frame goes on the active link.
  CHECK(data_in(*h.net.link(kPrimary, 0)).size() == 5);
  CHECK(data_in(*h.net.link(kFallback, 0)).size() == 4);

  h.net.hold(kPrimary, 0, false);
  h.net.hold(kFallback, 0, false);
  h.pump();
  t.check_all();
  check_delivered(small_recv, small_send);
  check_sent(small_send);
  CHECK(h.net.data_carried(kFallback, 0) == 4);
  // Each receive matched on one link and was withdrawn from the other: nothing stays posted.
  CHECK(h.net.link(kPrimary, 1)->posted() == 0);
  CHECK(h.net.link(kFallback, 1)->posted() == 0);
  CHECK(h.stats(1).duplicates_dropped == 0);
  CHECK(h.stats(0).frames_replayed == 0);
  // Frames on the other link are its share, not a move: nobody switched.
  CHECK(h.stats(0).failovers == 0);
  CHECK(h.stats(1).failovers == 0);
}

TEST_CASE("multi-path: a link that fails with its share in flight: the share goes on the other") {
  Harness h(2, multipath);
  Transfers t;
  t.post_recvs(h, 1, 1, 6, kLarge);
  h.net.hold(kFallback, 0);  // the fallback's share never arrives
  t.post_sends(h, 0, 1, 6, kLarge);
  h.pump();
  size_t delivered = 0;
  for (const auto& r : t.recvs) delivered += static_cast<size_t>(r->completions);
  CHECK(delivered == 3);

  h.net.fail(kFallback);
  h.pump();
  t.check_all();
  CHECK(h.stats(0).frames_replayed == 3);
  CHECK(h.stats(1).duplicates_dropped == 0);
  CHECK(h.net.link(kPrimary, 1)->posted() == 0);
}

TEST_CASE("multi-path: a frame half received on one link and sent again on the other, once") {
  Harness h(2, multipath);
  Transfers t;
  t.post_recvs(h, 1, 1, 2, kLarge);  // the second takes its frame in pieces
  h.net.hold(kPrimary, 0);
  h.net.hold(kFallback, 0);
  t.post_sends(h, 0, 1, 2, kLarge);  // the first on the primary, the second on the fallback
  h.pump();
  REQUIRE(data_in(*h.net.link(kFallback, 0)).size() == 1);
  WireFrame f;
  REQUIRE(h.net.take(kFallback, 0, f, hcomm::fake::is_data));
  CHECK(f.header.op_seq == 2);
  h.net.link(kFallback, 1)->arrive(f, kLarge / 2);  // half of it, reduced into the receive
  CHECK(t.recvs[1]->piece_bytes == kLarge / 2);

  // Rank 0's end of the fallback breaks: the frame goes again on the primary, whole. Rank 1
  // then has the frame arriving on both links: the fallback, in the middle of it, goes.
  h.net.link(kFallback, 0)->fail({HCOMM_ERR_TRANSPORT, "broken on rank 0's side"});
  h.net.hold(kPrimary, 0, false);
  h.pump();
  t.check_all();  // exactly the bytes sent, every piece once (none misplaced)
  CHECK(h.stats(0).frames_replayed == 1);
  const ChannelEvent* down = h.rank[1].listener.last(ChannelEvent::Kind::down, kFallback);
  REQUIRE(down != nullptr);
  CHECK(down->reason.find("came again on the other link") != std::string::npos);
}

TEST_CASE("multi-path: a fallback made again carries large frames only once admitted") {
  Harness h(2, multipath);
  h.net.fail(kFallback);
  h.pump();
  h.link(0).command({SupervisorCommand::Kind::redial, kFallback, 0, ""});
  h.advance(500ms);  // up, and proven by the peer's heartbeats
  const ChannelEvent* up = h.rank[0].listener.last(ChannelEvent::Kind::up, kFallback);
  REQUIRE(up != nullptr);
  const size_t before = h.net.data_carried(kFallback, 0);

  Transfers first;
  first.post_recvs(h, 1, 1, 4, kLarge);
  h.net.hold(kPrimary, 0);
  first.post_sends(h, 0, 1, 4, kLarge);
  h.pump();
  CHECK(data_in(*h.net.link(kPrimary, 0)).size() == 4);  // on probation: not in the split
  h.net.hold(kPrimary, 0, false);
  h.pump();
  first.check_all();
  CHECK(h.net.data_carried(kFallback, 0) == before);

  // The coordinator's supervisor admits it (its probe passed); the peer follows the notice.
  h.link(0).command({SupervisorCommand::Kind::admit, kFallback, up->epoch, "probe passed"});
  h.pump();
  Transfers both_ways;
  both_ways.post_recvs(h, 1, 11, 4, kLarge);
  both_ways.post_recvs(h, 0, 21, 4, kLarge);
  for (int r = 0; r < 2; ++r) {
    h.net.hold(kPrimary, r);
    h.net.hold(kFallback, r);
  }
  both_ways.post_sends(h, 0, 11, 4, kLarge);
  both_ways.post_sends(h, 1, 21, 4, kLarge);
  h.pump();
  CHECK(data_in(*h.net.link(kFallback, 0)).size() == 2);
  CHECK(data_in(*h.net.link(kFallback, 1)).size() == 2);
  for (int r = 0; r < 2; ++r) {
    h.net.hold(kPrimary, r, false);
    h.net.hold(kFallback, r, false);
  }
  h.pump();
  both_ways.check_all();
}

TEST_CASE("gray failure: frames arriving far below the link's healthy rate move the traffic") {
  Harness h;
  // Rank 1's primary: frames arrive the whole time, at 1 GB/s, then at 1% of it.
  double rate = 1e9;
  auto feed = [&] {
    if (FakeLink* l = h.net.link(kPrimary, 1)) {
      l->counters.receiving_us += 10000;
      l->counters.bytes_received += static_cast<uint64_t>(rate * 0.01);
    }
  };
  h.advance(500ms, feed);
  CHECK(h.stats(1).gray_failures == 0);
  rate = 1e7;
  h.advance(400ms, feed);
  CHECK(h.stats(1).gray_failures == 1);
  CHECK(h.stats(1).failovers == 1);
  const ChannelEvent* down = h.rank[1].listener.last(ChannelEvent::Kind::down, kPrimary);
  REQUIRE(down != nullptr);
  CHECK(down->gray);
  CHECK(down->reason.find("gray failure: frames arrived at ") != std::string::npos);
  const auto events = h.stats(1).events;
  REQUIRE_FALSE(events.empty());
  CHECK(events.back().kind == hcomm::LinkEvent::Kind::failover);

  // Both ranks' traffic now goes on the fallback (rank 0 followed the switch notice).
  Transfers t;
  t.post_recvs(h, 0, 1, 2, 1000);
  t.post_recvs(h, 1, 11, 2, 1000);
  t.post_sends(h, 1, 1, 2, 1000);
  t.post_sends(h, 0, 11, 2, 1000);
  h.pump();
  t.check_all();
  CHECK(h.net.data_carried(kFallback, 0) == 2);
  CHECK(h.net.data_carried(kFallback, 1) == 2);
  // The health figures say why, per link, in failover_stats().
  bool found = false;
  for (const hcomm::LinkHealthInfo& l : h.stats(1).links)
    if (l.link == "primary") {
      found = true;
      CHECK(l.state == "down");
      CHECK(l.healthy_in_gbps == doctest::Approx(8).epsilon(0.05));
    }
  CHECK(found);
}

TEST_CASE("probe: the coordinator's rounds are echoed by the peer and judged against the active") {
  Harness h;
  h.link(0).command({SupervisorCommand::Kind::probe, kFallback, 0, ""});
  h.advance(1000ms);
  const size_t rounds = count_events(h, 0, ChannelEvent::Kind::probe, kFallback);
  CHECK(rounds >= 5);
  CHECK(count_events(h, 1, ChannelEvent::Kind::probe, kFallback) == 0);  // the peer echoes
  const ChannelEvent* last = h.rank[0].listener.last(ChannelEvent::Kind::probe, kFallback);
  REQUIRE(last != nullptr);
  CHECK(last->passed);  // the fake links are equally fast
  CHECK(h.stats(0).probe_rounds == rounds);
  CHECK(h.stats(0).probes_passed == rounds);
  // Probe frames are no data: nothing reached the executors, nothing was numbered.
  CHECK(h.stats(1).duplicates_dropped == 0);

  SUBCASE("rounds the peer does not echo fail by the timeout") {
    h.net.hold(kFallback, 1);
    h.advance(3500ms);  // three timed-out rounds: the best of the last three is 0
    last = h.rank[0].listener.last(ChannelEvent::Kind::probe, kFallback);
    REQUIRE(last != nullptr);
    CHECK_FALSE(last->passed);
    CHECK(last->reason.find("not echoed within 800 ms") != std::string::npos);
  }
  SUBCASE("probing stops on the supervisor's word") {
    h.link(0).command({SupervisorCommand::Kind::probe, kNoSlot, 0, ""});
    h.advance(300ms);  // a round out then may still end
    const size_t stopped = count_events(h, 0, ChannelEvent::Kind::probe, kFallback);
    h.advance(1000ms);
    CHECK(count_events(h, 0, ChannelEvent::Kind::probe, kFallback) == stopped);
  }
}
