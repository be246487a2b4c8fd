// The reliable channel (failover/ReliableLink) on fake links (fake_links.hpp), on one thread with
// a clock that moves only when the test says: replay after a switch, duplicates, acknowledgement
// ranges, a frame half received when its link fails, a fail-back while a replay is under way, a
// link failing inside the replay, the peer's loss and its goodbye; its pieces alone
// (ReplayBuffer, Receipts); the channel-message codec. Every case checks the bytes each receive
// got against the bytes sent, and that each request completed exactly once.
#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "failover/channel_message.hpp"
#include "failover/failover_recorder.hpp"
#include "failover/receipts.hpp"
#include "failover/reliable_link.hpp"
#include "failover/replay_buffer.hpp"
#include "tests/unit/reliable_link_harness.hpp"

using hcomm::HCOMM_ERR_TRANSPORT;
using hcomm::Status;
using hcomm::failover::AckRange;
using hcomm::failover::ChannelEvent;
using hcomm::failover::ChannelMessage;
using hcomm::failover::EncodedChannelMessage;
using hcomm::failover::kFallback;
using hcomm::failover::kMaxAckRanges;
using hcomm::failover::kPrimary;
using hcomm::failover::Receipts;
using hcomm::failover::ReliableLink;
using hcomm::failover::ReliableLinkParams;
using hcomm::failover::ReplayBuffer;
using hcomm::failover::SupervisorCommand;
using hcomm::fake::ack;
using hcomm::fake::acks_in;
using hcomm::fake::channel_frame;
using hcomm::fake::check_delivered;
using hcomm::fake::check_sent;
using hcomm::fake::data_header;
using hcomm::fake::data_in;
using hcomm::fake::FakeLink;
using hcomm::fake::FakeNet;
using hcomm::fake::Harness;
using hcomm::fake::is_channel;
using hcomm::fake::is_data;
using hcomm::fake::kComm;
using hcomm::fake::ManualScheduler;
using hcomm::fake::pattern;
using hcomm::fake::Recv;
using hcomm::fake::Send;
using hcomm::fake::WireFrame;
using hcomm::transport::FrameHeader;
using hcomm::transport::FrameKind;
using namespace std::chrono_literals;

TEST_CASE("ReliableLink: frames unacknowledged on the primary go again on the fallback, once") {
  Harness h;
  const std::vector<size_t> sizes = {100, 20000, 3000, 65536, 1};
  std::vector<std::unique_ptr<Send>> sends;
  std::vector<std::unique_ptr<Recv>> recvs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    recvs.push_back(std::make_unique<Recv>(i + 1, sizes[i], /*in_pieces=*/i % 2 == 0));
    h.link(1).post_recv(recvs.back().get());
  }
  h.net.hold(kPrimary, 0);  // sent on the primary, never arriving
  for (size_t i = 0; i < sizes.size(); ++i) {
    sends.push_back(std::make_unique<Send>(i + 1, sizes[i]));
    h.link(0).post_send(sends.back().get());
  }
  h.pump();
  CHECK(data_in(*h.net.link(kPrimary, 0)).size() == sizes.size());
  // Copied frames complete at once; the ones kept in place wait for the acknowledgement.
  CHECK(sends[0]->completions == 1);
  CHECK(sends[1]->completions == 0);
  CHECK(sends[3]->completions == 0);
  for (auto& r : recvs) CHECK(r->completions == 0);

  h.net.fail(kPrimary);
  h.pump();
  for (size_t i = 0; i < sizes.size(); ++i) {
    CAPTURE(i);
    check_delivered(*recvs[i], *sends[i]);
    check_sent(*sends[i]);
  }
  CHECK(h.net.data_carried(kPrimary, 0) == 0);
  CHECK(h.net.data_carried(kFallback, 0) == sizes.size());
  const auto s0 = h.stats(0);
  CHECK(s0.frames_replayed == sizes.size());
  CHECK(s0.bytes_replayed == 100 + 20000 + 3000 + 65536 + 1);
  CHECK(h.stats(1).duplicates_dropped == 0);
  const ChannelEvent* sw = h.rank[0].listener.last(ChannelEvent::Kind::switched, kFallback);
  REQUIRE(sw != nullptr);
  CHECK(sw->from == kPrimary);
}

TEST_CASE("ReliableLink: frames delivered before the switch but not acknowledged are dropped") {
  Harness h;
  const std::vector<size_t> sizes = {512, 40000, 7};
  std::vector<std::unique_ptr<Send>> sends;
  std::vector<std::unique_ptr<Recv>> recvs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    recvs.push_back(std::make_unique<Recv>(i + 1, sizes[i], i == 1));
    h.link(1).post_recv(recvs.back().get());
  }
  h.net.hold(kPrimary, 1);  // the acknowledgements never come back
  for (size_t i = 0; i < sizes.size(); ++i) {
    sends.push_back(std::make_unique<Send>(i + 1, sizes[i]));
    h.link(0).post_send(sends.back().get());
  }
  h.pump();
  for (size_t i = 0; i < sizes.size(); ++i) check_delivered(*recvs[i], *sends[i]);
  CHECK(sends[1]->completions == 0);  // in place: waits for its acknowledgement

  h.net.fail(kPrimary);
  h.pump();
  CHECK(h.net.data_carried(kFallback, 0) == sizes.size());  // all sent again ...
  CHECK(h.stats(1).duplicates_dropped == sizes.size());     // ... and dropped
  for (size_t i = 0; i < sizes.size(); ++i) {
    CAPTURE(i);
    check_delivered(*recvs[i], *sends[i]);
    check_sent(*sends[i]);
  }
}

TEST_CASE("ReliableLink: a frame that arrives twice, on either link, is delivered once") {
  Harness h;
  h.net.hold(kPrimary, 0);
  h.net.hold(kPrimary, 1);  // to read rank 1's acknowledgements
  FakeLink& p0 = *h.net.link(kPrimary, 0);
  FakeLink& p1 = *h.net.link(kPrimary, 1);
  FakeLink& f1 = *h.net.link(kFallback, 1);
  p1.outbox().clear();

  // Twice on the same link.
  Recv r1(1, 500, false);
  Send s1(1, 500);
  h.link(1).post_recv(&r1);
  h.link(0).post_send(&s1);
  h.pump();
  REQUIRE(data_in(p0).size() == 1);
  const WireFrame first = p0.take();
  p1.arrive(first);
  p1.arrive(first);
  h.pump();
  check_delivered(r1, s1);
  CHECK(h.stats(1).duplicates_dropped == 1);
  // The duplicate says the peer lacks the acknowledgement: one goes out after this round.
  auto acks = acks_in(p1);
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].cumulative == 1);
  CHECK(acks[0].ranges.empty());
  p1.outbox().clear();

  // Then on the other link: dropped there too, acknowledged on the link that carries traffic,
  // and no reason to move there.
  Recv r2(2, 20000, true);
  Send s2(2, 20000);  // in place: completes on the acknowledgement
  h.link(1).post_recv(&r2);
  h.link(0).post_send(&s2);
  h.pump();
  REQUIRE(data_in(p0).size() == 1);
  const WireFrame second = p0.take();
  p1.arrive(second);
  h.pump();
  f1.arrive(second);
  h.pump();
  check_delivered(r2, s2);
  CHECK(h.stats(1).duplicates_dropped == 2);
  CHECK(h.rank[1].listener.last(ChannelEvent::Kind::switched, kFallback) == nullptr);
  acks = acks_in(p1);
  REQUIRE(acks.size() == 2);  // at once (kFrameAckNow), and again for the duplicate
  CHECK(acks[0].cumulative == 2);
  CHECK(acks[1].cumulative == 2);
  CHECK(s2.completions == 0);
  h.net.hold(kPrimary, 1, false);
  h.pump();
  check_sent(s1);
  check_sent(s2);
}

TEST_CASE("ReliableLink: acknowledgements release exactly the frames they name, in any order") {
  Harness h(1);  // the test is rank 1
  FakeLink& p0 = *h.net.link(kPrimary, 0);
  p0.outbox().clear();
  std::vector<std::unique_ptr<Send>> sends;
  for (uint64_t op = 1; op <= 6; ++op) {
    sends.push_back(std::make_unique<Send>(op, 20000));  // in place: completes when released
    h.link(0).post_send(sends.back().get());
  }
  h.pump();
  auto frames = data_in(p0);
  REQUIRE(frames.size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    CHECK(frames[i]->header.link_seq == i + 1);
    CHECK(frames[i]->payload == sends[i]->data);
  }
  while (!p0.outbox().empty()) p0.take();
  auto completed = [&] {
    std::vector<int> c;
    for (auto& s : sends) c.push_back(s->completions);
    return c;
  };
  CHECK(completed() == std::vector<int>{0, 0, 0, 0, 0, 0});

  p0.arrive(channel_frame(ack(2, {{4, 4}, {6, 6}})));
  h.pump();
  CHECK(completed() == std::vector<int>{1, 1, 0, 1, 0, 1});
  p0.arrive(channel_frame(ack(1)));  // an older one, late
  h.pump();
  CHECK(completed() == std::vector<int>{1, 1, 0, 1, 0, 1});
  p0.arrive(channel_frame(ack(0, {{5, 5}})));  // a range alone, below nothing
  h.pump();
  CHECK(completed() == std::vector<int>{1, 1, 0, 1, 1, 1});
  // Every channel message acknowledges through its header, heartbeats too.
  p0.arrive(channel_frame(ChannelMessage{}));
  h.pump();
  CHECK(completed() == std::vector<int>{1, 1, 0, 1, 1, 1});

  // What is still kept, and only that, goes again after a switch.
  p0.fail({HCOMM_ERR_TRANSPORT, "cut"});
  h.pump();
  FakeLink& f0 = *h.net.link(kFallback, 0);
  frames = data_in(f0);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0]->header.link_seq == 3);
  CHECK(frames[0]->payload == sends[2]->data);
  CHECK(h.stats(0).frames_replayed == 1);
  CHECK(h.stats(0).bytes_replayed == 20000);
  while (!f0.outbox().empty()) f0.take();
  ChannelMessage beat;
  beat.cumulative = 6;
  f0.arrive(channel_frame(beat));
  h.pump();
  for (auto& s : sends) check_sent(*s);
}

TEST_CASE("ReliableLink: a malformed channel message is ignored, acknowledgement and all") {
  Harness h(1);
  FakeLink& p0 = *h.net.link(kPrimary, 0);
  Send s(1, 30000);
  h.link(0).post_send(&s);
  h.pump();
  while (!p0.outbox().empty()) p0.take();
  WireFrame torn = channel_frame(ack(1, {{3, 4}}));
  torn.payload.pop_back();  // 15 bytes: not a whole range
  p0.arrive(torn);
  WireFrame future = channel_frame(ack(1));
  future.header.step += 1u << 16;  // another codec version
  p0.arrive(future);
  h.pump();
  CHECK(s.completions == 0);
  p0.arrive(channel_frame(ack(1)));
  h.pump();
  check_sent(s);
}

TEST_CASE("ReliableLink: a frame half received when its link fails arrives whole, once") {
  for (const bool pieces : {true, false}) {
    CAPTURE(pieces);
    Harness h;
    Recv r1(1, 65536, pieces);
    Recv r2(2, 40000, !pieces);
    Send s1(1, 65536);
    Send s2(2, 40000);
    h.link(1).post_recv(&r1);
    h.link(1).post_recv(&r2);
    h.net.hold(kPrimary, 0);
    h.link(0).post_send(&s1);
    h.link(0).post_send(&s2);
    h.pump();
    FakeLink& p0 = *h.net.link(kPrimary, 0);
    FakeLink& p1 = *h.net.link(kPrimary, 1);
    REQUIRE(p0.outbox().size() == 2);
    REQUIRE(data_in(p0).size() == 2);
    p1.arrive(p0.take(), 10 * 1024 + 4);  // the first 10 KiB and 4 bytes, and no more
    if (pieces) CHECK(r1.next == 10 * 1024 + 4);
    CHECK(r1.completions == 0);

    h.net.fail(kPrimary);
    h.pump();
    check_delivered(r1, s1);
    check_delivered(r2, s2);
    check_sent(s1);
    check_sent(s2);
    CHECK(h.stats(0).frames_replayed == 2);
    CHECK(h.stats(1).duplicates_dropped == 0);
  }
}

TEST_CASE("ReliableLink: a half-received frame is whole, once, when the peer switches first") {
  // Rank 0 alone sees the primary fail; rank 1, in the middle of a frame on it, learns of the
  // switch from the frames that come on the fallback (the frame again among them, which may
  // land in the fallback's unexpected store before rank 1 moves its receives over).
  for (const bool pieces : {true, false}) {
    CAPTURE(pieces);
    Harness h;
    Recv r1(1, 65536, pieces);
    Send s1(1, 65536);
    Recv r2(2, 3000, true);
    Send s2(2, 3000);
    h.link(1).post_recv(&r1);
    h.link(1).post_recv(&r2);
    h.net.hold(kPrimary, 0);
    h.link(0).post_send(&s1);
    h.link(0).post_send(&s2);
    h.pump();
    FakeLink& p1 = *h.net.link(kPrimary, 1);
    WireFrame f;
    REQUIRE(h.net.take(kPrimary, 0, f, is_data));
    p1.arrive(f, 4096);
    h.net.link(kPrimary, 0)->fail({HCOMM_ERR_TRANSPORT, "cut on one side"});
    h.pump();
    check_delivered(r1, s1);
    check_delivered(r2, s2);
    check_sent(s1);
    check_sent(s2);
    const ChannelEvent* sw = h.rank[1].listener.last(ChannelEvent::Kind::switched, kFallback);
    REQUIRE(sw != nullptr);
    CHECK_FALSE(h.rank[1].executor.failed);
  }
}

TEST_CASE("ReliableLink: a fallback that fails while taking the replay, the primary made again") {
  Harness h;
  const std::vector<size_t> sizes = {300, 25000, 4000, 17000};
  std::vector<std::unique_ptr<Send>> sends;
  std::vector<std::unique_ptr<Recv>> recvs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    recvs.push_back(std::make_unique<Recv>(i + 1, sizes[i], i % 2 == 1));
    h.link(1).post_recv(recvs.back().get());
  }
  h.net.hold(kPrimary, 0);
  for (size_t i = 0; i < sizes.size(); ++i) {
    sends.push_back(std::make_unique<Send>(i + 1, sizes[i]));
    h.link(0).post_send(sends.back().get());
  }
  h.pump();
  // Rank 0's fallback takes one replayed frame and fails inside the send of the second: no link
  // is left, the replay stops there, and the operations wait.
  h.net.link(kFallback, 0)->sends_before_failure = 1;
  h.net.fail(kPrimary);
  h.net.fail(kFallback);
  h.pump();
  for (auto& r : recvs) CHECK(r->completions == 0);
  CHECK_FALSE(h.rank[0].executor.failed);
  CHECK_FALSE(h.rank[1].executor.failed);
  CHECK(h.rank[0].listener.last(ChannelEvent::Kind::switched, hcomm::failover::kNoSlot));

  // With no other link to agree over, each rank makes the primary again by itself.
  h.net.hold(kPrimary, 0, false);
  h.link(0).command({SupervisorCommand::Kind::redial, kPrimary, 0, ""});
  h.link(1).command({SupervisorCommand::Kind::redial, kPrimary, 0, ""});
  h.pump();
  for (size_t i = 0; i < sizes.size(); ++i) {
    CAPTURE(i);
    check_delivered(*recvs[i], *sends[i]);
    check_sent(*sends[i]);
  }
  CHECK(h.net.data_carried(kPrimary, 0) == sizes.size());
  CHECK(h.stats(1).duplicates_dropped == 0);
}

TEST_CASE("ReliableLink: a peer declared lost fails what waits on it, once, with PEER_LOST") {
  Harness h;
  Recv r(1, 5000, true);
  Send copied(2, 100);
  Send in_place(3, 30000);
  h.link(0).post_recv(&r);
  h.net.hold(kPrimary, 0);
  h.link(0).post_send(&copied);
  h.link(0).post_send(&in_place);
  h.pump();
  h.net.fail(kPrimary);
  h.net.fail(kFallback);
  h.pump();
  CHECK(r.completions == 0);
  CHECK(in_place.completions == 0);
  h.link(0).command({SupervisorCommand::Kind::declare_lost, hcomm::failover::kNoSlot, 0, "gone"});
  CHECK(r.completions == 1);
  CHECK(r.status.code() == hcomm::HCOMM_ERR_PEER_LOST);
  check_sent(copied);  // complete when copied, before anything failed
  CHECK(in_place.completions == 1);
  CHECK(in_place.status.code() == hcomm::HCOMM_ERR_PEER_LOST);
  CHECK(h.rank[0].executor.failed);
  CHECK(h.rank[0].executor.failure.code() == hcomm::HCOMM_ERR_PEER_LOST);
  CHECK(h.stats(0).peers_lost == 1);
  Send later(4, 10);
  Recv later_recv(4, 10, false);
  h.link(0).post_send(&later);
  h.link(0).post_recv(&later_recv);
  CHECK(later.status.code() == hcomm::HCOMM_ERR_PEER_LOST);
  CHECK(later_recv.status.code() == hcomm::HCOMM_ERR_PEER_LOST);
  h.pump();
  CHECK(r.completions == 1);
  CHECK(in_place.completions == 1);
}

TEST_CASE("ReliableLink: after the peer's goodbye, its last frames are still received") {
  Harness h;
  Send last(1, 2000);
  h.link(1).post_send(&last);
  h.pump();  // stored at rank 0: no receive posted yet
  Send unanswered(2, 30000);
  h.net.hold(kPrimary, 0);
  h.link(0).post_send(&unanswered);
  h.pump();
  CHECK(unanswered.completions == 0);
  h.link(1).close();
  h.pump();
  // The peer completed its part of everything before saying goodbye: frames to it count as
  // delivered; what it sent is received from the link its goodbye came on.
  check_sent(unanswered);
  CHECK(h.rank[0].executor.failed);
  CHECK(h.rank[0].executor.failure.code() == hcomm::HCOMM_ERR_PEER_LOST);
  Recv r(1, 2000, true);
  h.link(0).post_recv(&r);
  check_delivered(r, last);
  Recv never(3, 10, false);
  h.link(0).post_recv(&never);
  CHECK(never.completions == 1);
  CHECK_FALSE(never.status.ok());
}

TEST_CASE("ReliableLink: a frame that arrived before its receive survives the switch") {
  Harness h;
  Send s1(1, 20000);  // in place: completes once rank 1 has it, posted or not
  Send s2(2, 900);
  h.link(0).post_send(&s1);
  h.link(0).post_send(&s2);
  h.pump();
  check_sent(s1);  // acknowledged, dropped by the sender: only rank 1 has it now
  check_sent(s2);
  h.net.fail(kPrimary);
  h.pump();
  // The small one waited for a lazy acknowledgement: sent again, and dropped as a duplicate.
  CHECK(h.stats(0).frames_replayed == 1);
  CHECK(h.stats(1).duplicates_dropped == 1);
  Recv r1(1, 20000, true);
  Recv r2(2, 900, false);
  h.link(1).post_recv(&r1);
  h.link(1).post_recv(&r2);
  h.pump();
  check_delivered(r1, s1);
  check_delivered(r2, s2);
}

TEST_CASE("ReliableLink: a fail-back while the fallback's replay is under way loses nothing") {
  Harness h;
  const std::vector<size_t> sizes = {700, 20000, 5000, 30000, 1, 16384, 16385, 9000};
  const size_t n = sizes.size();
  std::vector<std::unique_ptr<Send>> sends;
  std::vector<std::unique_ptr<Recv>> recvs;
  for (size_t i = 0; i < n; ++i) {
    recvs.push_back(std::make_unique<Recv>(i + 1, sizes[i], i % 3 == 0));
    h.link(1).post_recv(recvs.back().get());
  }
  h.net.hold(kPrimary, 0);
  for (size_t i = 0; i < n; ++i) {
    sends.push_back(std::make_unique<Send>(i + 1, sizes[i]));
    h.link(0).post_send(sends.back().get());
  }
  h.pump();

  // The primary fails with everything in it: both ranks move to the fallback, rank 0 replays.
  h.net.hold(kFallback, 0);
  h.net.hold(kFallback, 1);  // rank 1's acknowledgements do not come back this way
  h.net.fail(kPrimary);
  h.pump();
  REQUIRE(data_in(*h.net.link(kFallback, 0)).size() == n);
  CHECK(h.net.deliver(kFallback, 0, 3, is_data) == 3);  // part of the replay arrives
  h.pump();
  for (size_t i = 0; i < 3; ++i) check_delivered(*recvs[i], *sends[i]);
  for (size_t i = 3; i < n; ++i) CHECK(recvs[i]->completions == 0);

  // The coordinator makes the primary again (its request overtakes the queued frames, as on a
  // medium of several connections); the primary carries heartbeats (which acknowledge the three
  // that arrived) until it counts as up.
  h.net.hold(kPrimary, 0, false);
  h.link(0).command({SupervisorCommand::Kind::redial, kPrimary, 0, ""});
  h.advance(600ms, [&] { h.net.deliver(kFallback, 0, SIZE_MAX, is_channel); });
  const ChannelEvent* up = h.rank[0].listener.last(ChannelEvent::Kind::up, kPrimary);
  REQUIRE(up != nullptr);
  const uint64_t epoch = up->epoch;
  CHECK(epoch == 2);
  for (size_t i = 3; i < n; ++i) CHECK(recvs[i]->completions == 0);  // still queued

  // Two more of the replay are on their way on the fallback when rank 0 moves back; they
  // arrive before anything on the primary does.
  std::vector<WireFrame> on_the_way(2);
  for (auto& f : on_the_way) REQUIRE(h.net.take(kFallback, 0, f, is_data));
  CHECK(on_the_way[0].header.link_seq == 4);
  CHECK(on_the_way[1].header.link_seq == 5);
  h.link(0).command({SupervisorCommand::Kind::activate, kPrimary, epoch, "fail-back"});
  for (const auto& f : on_the_way) h.net.link(kFallback, 1)->arrive(f);
  h.pump();
  for (size_t i = 0; i < 5; ++i) check_delivered(*recvs[i], *sends[i]);
  // The fallback stands by, healthy: what it holds arrives on it, nothing goes again.
  h.net.hold(kFallback, 0, false);
  h.net.hold(kFallback, 1, false);
  h.pump();

  for (size_t i = 0; i < n; ++i) {
    CAPTURE(i);
    check_delivered(*recvs[i], *sends[i]);
    check_sent(*sends[i]);
  }
  CHECK(h.stats(0).frames_replayed == n);
  CHECK(h.net.data_carried(kPrimary, 0) == 0);
  CHECK(h.net.data_carried(kFallback, 0) == n - 2);  // and the two on their way
  CHECK(h.stats(1).duplicates_dropped == 0);
  CHECK(h.stats(0).failbacks == 1);
  CHECK(h.rank[1].listener.last(ChannelEvent::Kind::switched, kPrimary) != nullptr);
  CHECK(h.net.protocol(kFallback).made == 2);  // neither rank made its fallback again

  // And later traffic takes the primary.
  Recv r(100, 3000, true);
  Send s(100, 3000);
  h.link(1).post_recv(&r);
  const size_t before = h.net.data_carried(kPrimary, 0);
  h.link(0).post_send(&s);
  h.pump();
  check_delivered(r, s);
  CHECK(h.net.data_carried(kPrimary, 0) == before + 1);
  CHECK_FALSE(h.rank[0].executor.failed);
  CHECK_FALSE(h.rank[1].executor.failed);
}

namespace {

/// The primary fails, both ranks move to the fallback, and the primary is made again until it
/// counts as up; returns its epoch (for the fail-back command).
uint64_t fail_over_and_remake(Harness& h) {
  h.net.fail(kPrimary);
  h.pump();
  h.link(0).command({SupervisorCommand::Kind::redial, kPrimary, 0, ""});
  h.advance(600ms);
  const ChannelEvent* up = h.rank[0].listener.last(ChannelEvent::Kind::up, kPrimary);
  REQUIRE(up != nullptr);
  return up->epoch;
}

}  // namespace

TEST_CASE("ReliableLink: after a fail-back the fallback stands by: the next fault finds it up") {
  Harness h;
  for (int round = 1; round <= 3; ++round) {
    CAPTURE(round);
    const uint64_t epoch = fail_over_and_remake(h);
    h.link(0).command({SupervisorCommand::Kind::activate, kPrimary, epoch, "fail-back"});
    h.pump();
    REQUIRE(h.rank[1].listener.last(ChannelEvent::Kind::switched, kPrimary) != nullptr);

    // Traffic is on the primary, and a fault of it right away moves traffic to the fallback
    // at once: still the link made at creation, not a reconnection.
    Recv r1(10 * round, 3000, true), r2(10 * round + 1, 40000, false);
    Send s1(10 * round, 3000), s2(10 * round + 1, 40000);
    h.link(1).post_recv(&r1);
    h.link(1).post_recv(&r2);
    h.net.hold(kPrimary, 0);
    h.link(0).post_send(&s1);
    h.link(0).post_send(&s2);
    h.pump();
    const size_t switches = h.rank[0].listener.events.size();
    h.net.fail(kPrimary);
    h.pump();
    h.net.hold(kPrimary, 0, false);
    check_delivered(r1, s1);
    check_delivered(r2, s2);
    check_sent(s1);
    check_sent(s2);
    bool waited = false;  // a switch to no link: operations would wait
    for (size_t i = switches; i < h.rank[0].listener.events.size(); ++i) {
      const ChannelEvent& e = h.rank[0].listener.events[i];
      waited |= e.kind == ChannelEvent::Kind::switched && e.slot == hcomm::failover::kNoSlot;
    }
    CHECK_FALSE(waited);
    CHECK(h.rank[0].listener.last(ChannelEvent::Kind::switched, kFallback) != nullptr);
    CHECK(h.net.protocol(kFallback).made == 2);
  }
  CHECK(h.stats(0).failbacks == 3);
  CHECK(h.stats(1).duplicates_dropped == 0);
  CHECK_FALSE(h.rank[0].executor.failed);
  CHECK_FALSE(h.rank[1].executor.failed);
}

TEST_CASE("ReliableLink: a frame stored on the link left standing by reaches its later receive") {
  // Rank 1 sends ahead on the fallback; the frame waits in rank 0's fallback for its receive,
  // which is posted only after rank 0 has failed back to the primary.
  Harness h;
  const uint64_t epoch = fail_over_and_remake(h);
  Send s1(1, 900), s2(2, 30000);
  h.link(1).post_send(&s1);
  h.link(1).post_send(&s2);
  h.pump();
  h.link(0).command({SupervisorCommand::Kind::activate, kPrimary, epoch, "fail-back"});
  h.pump();
  Recv r1(1, 900, false), r2(2, 30000, true);
  h.link(0).post_recv(&r1);
  h.link(0).post_recv(&r2);
  h.pump();
  check_delivered(r1, s1);
  check_delivered(r2, s2);
  check_sent(s1);
  check_sent(s2);
  CHECK(h.net.data_carried(kFallback, 1) == 2);
  CHECK(h.stats(1).frames_replayed == 0);
}

TEST_CASE("ReliableLink: frames still coming on a standby reach their receives, no switch back") {
  // Rank 0 fails back; rank 1 sends on the fallback before it hears of it. Rank 0 has moved its
  // receives to the primary: the late frames, stored on the standby, are handed to them.
  Harness h;
  const uint64_t epoch = fail_over_and_remake(h);
  Recv r1(1, 500, false), r2(2, 20000, true), r3(3, 7000, false);
  Send s1(1, 500), s2(2, 20000), s3(3, 7000);
  h.link(0).post_recv(&r1);
  h.link(0).post_recv(&r2);
  h.link(0).post_recv(&r3);
  h.net.hold(kFallback, 1);
  h.link(1).post_send(&s1);
  h.link(1).post_send(&s2);
  h.pump();
  h.net.hold(kPrimary, 0);  // rank 0's switch notice waits
  const uint64_t failovers = h.stats(0).failovers;
  h.link(0).command({SupervisorCommand::Kind::activate, kPrimary, epoch, "fail-back"});
  h.pump();
  h.net.deliver(kFallback, 1);  // the two sent before rank 1 heard
  h.pump();
  check_delivered(r1, s1);
  check_delivered(r2, s2);
  h.net.hold(kPrimary, 0, false);
  h.net.hold(kFallback, 1, false);
  h.pump();
  h.link(1).post_send(&s3);  // after rank 1 followed
  h.pump();
  check_delivered(r3, s3);
  for (const Send* s : {&s1, &s2, &s3}) check_sent(*s);
  CHECK(h.net.data_carried(kFallback, 1) == 2);
  CHECK(h.net.data_carried(kPrimary, 1) == 1);
  // Rank 0 did not follow the late frames back to the fallback.
  CHECK(h.stats(0).failovers == failovers);
  CHECK(h.stats(0).failbacks == 1);
  CHECK(h.stats(1).duplicates_dropped == 0);
  CHECK(h.stats(0).duplicates_dropped == 0);
}

// ---- the pieces alone

TEST_CASE("ReplayBuffer: numbering, copies, acknowledgement once per frame, removal") {
  ReplayBuffer b;
  Send small(1, 100);
  Send large(2, ReplayBuffer::kStageMaxBytes + 1);
  Send edge(3, ReplayBuffer::kStageMaxBytes);
  ReplayBuffer::Frame& f1 = b.add(&small);
  ReplayBuffer::Frame& f2 = b.add(&large);
  ReplayBuffer::Frame& f3 = b.add(&edge);
  CHECK(f1.header.link_seq == 1);
  CHECK(f2.header.link_seq == 2);
  CHECK(f3.header.link_seq == 3);
  CHECK(f1.copied);
  CHECK(f1.payload != small.payload);
  CHECK(std::memcmp(f1.payload, small.data.data(), 100) == 0);
  CHECK_FALSE(f2.copied);
  CHECK(f2.payload == large.payload);
  CHECK((f2.header.flags & hcomm::transport::kFrameAckNow) != 0);
  CHECK(f3.copied);
  CHECK(b.copied_bytes() == 100 + ReplayBuffer::kStageMaxBytes);
  std::vector<std::unique_ptr<Send>> more;
  for (uint64_t op = 4; op <= 8; ++op) {
    more.push_back(std::make_unique<Send>(op, 10));
    b.add(more.back().get());
  }
  CHECK(b.size() == 8);

  CHECK(b.acknowledge(0, {{5, 6}}) == std::vector<uint64_t>{5, 6});
  CHECK(b.acknowledge(2, {{5, 7}}) == std::vector<uint64_t>{1, 2, 7});
  CHECK(b.acknowledge(7, {}) == std::vector<uint64_t>{3, 4});
  CHECK(b.find(3)->acked);
  CHECK(b.acknowledge(8, {{1, 100}}) == std::vector<uint64_t>{8});
  CHECK(b.acknowledge(8, {{1, 100}}).empty());
  CHECK(b.acknowledge(0, {{50, 60}}).empty());  // numbers never sent

  b.find(2)->in_flight = true;
  std::vector<uint64_t> done, again;
  b.idle(done, again);
  CHECK(done == std::vector<uint64_t>{1, 3, 4, 5, 6, 7, 8});
  CHECK(again.empty());
  CHECK(b.remove(1) == &small);
  CHECK(b.find(1) == nullptr);
  CHECK(b.remove(1) == nullptr);
  CHECK(b.copied_bytes() == ReplayBuffer::kStageMaxBytes + 5 * 10);
  const auto users = b.take_requests();
  CHECK(users.size() == 7);
  CHECK(users[0] == &large);
  CHECK(users[1] == &edge);
  CHECK(b.remove(2) == nullptr);  // taken already
  b.clear();
  CHECK(b.size() == 0);
  CHECK(b.copied_bytes() == 0);
}

TEST_CASE("Receipts: acknowledge at once, after the round, or with the tick") {
  Receipts r;
  CHECK_FALSE(r.owed());
  CHECK(r.arrived(0, 0) == Receipts::Due::later);  // unnumbered
  CHECK_FALSE(r.owed());
  CHECK(r.arrived(2, 0) == Receipts::Due::later);
  CHECK(r.arrived(3, hcomm::transport::kFrameAckNow) == Receipts::Due::now);
  CHECK(r.has(2));
  CHECK_FALSE(r.has(1));
  CHECK(r.arrived(2, hcomm::transport::kFrameAckNow) == Receipts::Due::later);  // counted
  ChannelMessage m = r.ack();
  CHECK(m.kind == ChannelMessage::Kind::ack);
  CHECK(m.cumulative == 0);
  CHECK(m.ranges == std::vector<AckRange>{{2, 3}});
  CHECK_FALSE(r.owed());
  CHECK(r.duplicate() == Receipts::Due::soon);
  CHECK(r.owed());
  r.ack();
  for (uint64_t seq = 1; seq < Receipts::kLazyAcks; ++seq)
    CHECK(r.arrived(seq + 3, 0) == Receipts::Due::later);
  CHECK(r.arrived(1, 0) == Receipts::Due::soon);  // the 64th owed
  m = r.ack();
  CHECK(m.cumulative == Receipts::kLazyAcks + 2);
  CHECK(m.ranges.empty());
}

// ---- the codec

TEST_CASE("channel messages: every kind survives encode and decode") {
  std::vector<ChannelMessage> all;
  all.push_back(ChannelMessage{});
  all.back().cumulative = 41;
  all.push_back(ack(7, {{9, 9}, {11, 20}}));
  std::vector<AckRange> many;
  for (uint64_t i = 0; i < kMaxAckRanges; ++i) many.push_back({100 + 3 * i, 101 + 3 * i});
  all.push_back(ack(~uint64_t{0} - 1000, many));
  all.push_back(ack(0));
  for (int slot : {kPrimary, kFallback}) {
    ChannelMessage sw;
    sw.kind = ChannelMessage::Kind::switched;
    sw.slot = slot;
    sw.cumulative = 3;
    sw.switches = 5 + static_cast<uint64_t>(slot);
    all.push_back(sw);
  }
  for (int slot : {kPrimary, kFallback}) {
    ChannelMessage admit;
    admit.kind = ChannelMessage::Kind::admit;
    admit.slot = slot;
    admit.stamp_us = 123456789;
    admit.echo_us = 123000000 + static_cast<uint64_t>(slot);
    all.push_back(admit);
  }
  for (auto kind : {ChannelMessage::Kind::redial_request, ChannelMessage::Kind::redial_reply}) {
    ChannelMessage m;
    m.kind = kind;
    m.slot = kPrimary;
    m.attempt = 12345678901ull;
    m.offer = std::string("qpn=17\0gid=fe80::1", 18);
    all.push_back(m);
    m.offer.clear();
    m.slot = kFallback;
    all.push_back(m);
  }
  for (const ChannelMessage& m : all) {
    CAPTURE(hcomm::failover::to_string(m.kind));
    const EncodedChannelMessage e = hcomm::failover::encode(m, kComm);
    CHECK(e.header.kind == static_cast<uint8_t>(FrameKind::channel));
    CHECK(e.header.comm_id == kComm);
    CHECK(e.payload.size() <= hcomm::transport::kMaxChannelPayload);
    auto d = hcomm::failover::decode(e.header, e.payload);
    REQUIRE(d.ok());
    CHECK(d->kind == m.kind);
    CHECK(d->cumulative == m.cumulative);
    CHECK(d->slot == m.slot);
    CHECK(d->attempt == m.attempt);
    CHECK(d->switches == m.switches);
    CHECK(d->ranges == m.ranges);
    CHECK(d->offer == m.offer);
    CHECK(d->stamp_us == (m.stamp_us != 0 ? m.stamp_us : 1));
    CHECK(d->echo_us == m.echo_us);
  }
}

TEST_CASE("channel messages: malformed ones are rejected with HCOMM_ERR_TRANSPORT") {
  auto enc = [](const ChannelMessage& m) { return hcomm::failover::encode(m, kComm); };
  ChannelMessage sw;
  sw.kind = ChannelMessage::Kind::switched;
  sw.slot = kFallback;
  sw.switches = 1;
  ChannelMessage redial;
  redial.kind = ChannelMessage::Kind::redial_request;
  redial.slot = kPrimary;
  redial.attempt = 4;

  struct Case {
    const char* what;
    EncodedChannelMessage e;
  };
  std::vector<Case> cases;
  auto with = [&](const char* what, EncodedChannelMessage e, auto change) {
    change(e);
    cases.push_back({what, std::move(e)});
  };
  with("a data frame", enc(ChannelMessage{}),
       [](auto& e) { e.header.kind = static_cast<uint8_t>(FrameKind::data); });
  with("version 0", enc(ChannelMessage{}), [](auto& e) { e.header.step &= 0xffff; });
  with("the next version", enc(ChannelMessage{}), [](auto& e) { e.header.step += 1u << 16; });
  with("kind 0", enc(ChannelMessage{}), [](auto& e) { e.header.step &= ~0xffffu; });
  with("kind 7", enc(ChannelMessage{}), [](auto& e) { e.header.step += 6; });
  with("a timestamp of 0", enc(ChannelMessage{}), [](auto& e) { e.header.op_bytes = 0; });
  ChannelMessage admit;
  admit.kind = ChannelMessage::Kind::admit;
  admit.slot = kFallback;
  with("an admission of slot 3", enc(admit), [](auto& e) { e.header.chunk = 3; });
  with("a heartbeat with a payload", enc(ChannelMessage{}), [](auto& e) { e.payload = "x"; });
  with("a heartbeat with a slot", enc(ChannelMessage{}), [](auto& e) { e.header.chunk = 1; });
  with("a heartbeat with an attempt", enc(ChannelMessage{}), [](auto& e) { e.header.op_seq = 2; });
  with("an ack of 15 bytes", enc(ack(0, {{1, 2}})), [](auto& e) { e.payload.pop_back(); });
  with("an ack of 17 bytes", enc(ack(0, {{1, 2}})), [](auto& e) { e.payload += '\0'; });
  with("a range that ends before it starts", enc(ack(0, {{5, 5}})), [](auto& e) {
    const uint64_t last = 4;
    std::memcpy(&e.payload[8], &last, 8);
  });
  with("ranges out of order", enc(ack(0, {{1, 2}, {5, 6}})), [](auto& e) {
    std::string first = e.payload.substr(0, 16);
    e.payload = e.payload.substr(16) + first;
  });
  with("ranges that overlap", enc(ack(0, {{1, 4}, {6, 8}})), [](auto& e) {
    const uint64_t first = 4;
    std::memcpy(&e.payload[16], &first, 8);
  });
  with("more ranges than fit an ack", enc(ack(0)), [](auto& e) {
    for (uint64_t i = 0; i <= kMaxAckRanges; ++i) {
      const uint64_t v[2] = {10 * i + 1, 10 * i + 2};
      e.payload.append(reinterpret_cast<const char*>(v), 16);
    }
  });
  with("a switch to slot 2", enc(sw), [](auto& e) { e.header.chunk = 2; });
  with("a switch with a payload", enc(sw), [](auto& e) { e.payload = "x"; });
  with("a switch numbered 0", enc(sw), [](auto& e) { e.header.op_seq = 0; });
  with("a redial of slot 7", enc(redial), [](auto& e) { e.header.chunk = 7; });
  with("an offer past the channel payload limit", enc(redial),
       [](auto& e) { e.payload.assign(hcomm::transport::kMaxChannelPayload + 1, 'o'); });
  for (const Case& c : cases) {
    CAPTURE(c.what);
    auto d = hcomm::failover::decode(c.e.header, c.e.payload);
    CHECK_FALSE(d.ok());
    CHECK(d.status().code() == HCOMM_ERR_TRANSPORT);
  }
}
