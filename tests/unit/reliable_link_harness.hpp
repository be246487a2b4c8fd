// The reliable channel's test harness: two ranks' ReliableLinks over FakeNet (fake_links.hpp)
// on one thread, with a clock that moves only when the test says; executor-side requests that
// send patterned bytes and check what they receive, exactly once; helpers to read what the
// links sent. Header-only, for tests/unit/reliable_link_test.cpp and
// tests/unit/reliable_link_paths_test.cpp.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "failover/channel_message.hpp"
#include "failover/failover_recorder.hpp"
#include "failover/reliable_link.hpp"
#include "tests/unit/fake_links.hpp"

namespace hcomm::fake {

using failover::AckRange;
using failover::ChannelEvent;
using failover::ChannelMessage;
using failover::EncodedChannelMessage;
using failover::kFallback;
using failover::kPrimary;
using failover::ReliableLink;
using failover::ReliableLinkParams;
using namespace std::chrono_literals;

inline constexpr uint32_t kComm = 7;

inline std::vector<std::byte> pattern(size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return v;
}

inline FrameHeader data_header(uint64_t op_seq, size_t length) {
  FrameHeader h;
  h.comm_id = kComm;
  h.op_seq = op_seq;
  h.length = length;
  h.op_bytes = length;
  return h;
}

/// An executor's send of `bytes` patterned bytes for operation `op`.
struct Send final : hcomm::transport::SendRequest {
  Send(uint64_t op, size_t bytes) : data(pattern(bytes, static_cast<unsigned>(op))) {
    header = data_header(op, bytes);
    payload = data.data();
  }
  void on_sent(const Status& s) override {
    ++completions;
    status = s;
  }
  std::vector<std::byte> data;
  int completions = 0;
  Status status{hcomm::HCOMM_ERR_INTERNAL, "not completed"};
};

/// An executor's receive for operation `op`: into its buffer, or in pieces (a reduction's way).
/// A piece that does not start where the one before ended (bytes handed twice, or skipped)
/// counts as `misplaced`.
struct Recv final : hcomm::transport::RecvRequest {
  Recv(uint64_t op, size_t bytes, bool in_pieces) : got(bytes, std::byte{0xee}), pieces(in_pieces) {
    key = {kComm, op, 0, 0};
  }
  Status accept(const FrameHeader& h) override {
    if (h.length != got.size()) return {hcomm::HCOMM_ERR_INVALID_ARG, "wrong size"};
    return {};
  }
  void* destination() override { return pieces ? nullptr : got.data(); }
  void on_piece(size_t offset, const void* data, size_t bytes) override {
    if (offset != next || bytes > got.size() - offset) {
      ++misplaced;
      return;
    }
    std::memcpy(got.data() + offset, data, bytes);
    next = offset + bytes;
    piece_bytes += bytes;
  }
  size_t piece_granularity() const override { return 4; }
  size_t expected_bytes() const override { return got.size(); }
  void on_received(const Status& s) override {
    ++completions;
    status = s;
  }
  std::vector<std::byte> got;
  bool pieces;
  size_t next = 0;
  size_t piece_bytes = 0;
  int misplaced = 0;
  int completions = 0;
  Status status{hcomm::HCOMM_ERR_INTERNAL, "not completed"};
};

/// Received once, whole, exactly the bytes `send` sent.
inline void check_delivered(const Recv& r, const Send& s) {
  CHECK(r.completions == 1);
  CHECK(r.status.ok());
  CHECK(r.misplaced == 0);
  if (r.pieces) CHECK(r.piece_bytes == s.data.size());
  CHECK(r.got == s.data);
}

inline void check_sent(const Send& s) {
  CHECK(s.completions == 1);
  CHECK(s.status.ok());
}

struct Executor final : hcomm::transport::LinkObserver {
  void on_remote_abort(int, uint32_t, uint64_t, const std::string&) override {}
  bool should_drop(const FrameHeader&) override { return false; }
  void on_link_failed(int, const Status& s, bool) override {
    failed = true;
    failure = s;
  }
  bool failed = false;
  Status failure;
};

struct Listener final : hcomm::failover::ChannelListener {
  void on_channel_event(const ChannelEvent& e) override { events.push_back(e); }
  /// The last event of `kind` about `slot`, or null.
  const ChannelEvent* last(ChannelEvent::Kind kind, int slot) const {
    for (auto it = events.rbegin(); it != events.rend(); ++it)
      if (it->kind == kind && it->slot == slot) return &*it;
    return nullptr;
  }
  std::vector<ChannelEvent> events;
};

struct Rank {
  Executor executor;
  Listener listener;
  hcomm::failover::FailoverRecorder recorder;
  std::unique_ptr<ReliableLink> link;
  int ups = 0;
  Status up;
};

/// Ranks 0 and 1 over a FakeNet, both links up, traffic on the primary. With `ranks` 1 only rank
/// 0 has a ReliableLink: the test plays rank 1 on rank 0's fake links.
struct Harness {
  /// `tune`: changes both ranks' parameters before their links are made (multi-path, ...).
  explicit Harness(int ranks = 2, const std::function<void(ReliableLinkParams&)>& tune = {}) {
    for (int r = 0; r < ranks; ++r) {
      ReliableLinkParams p;
      p.context.comm_id = kComm;
      p.context.my_rank = r;
      p.context.world_size = 2;
      p.context.peer = 1 - r;
      p.slots[kPrimary] = {&net.protocol(kPrimary), "primary", "p"};
      p.slots[kFallback] = {&net.protocol(kFallback), "fallback", "f"};
      p.keepalive_interval = 200ms;
      p.keepalive_timeout = 2000ms;
      p.scheduler = &sched;
      if (tune) tune(p);
      Rank& k = rank[static_cast<size_t>(r)];
      k.link = std::make_unique<ReliableLink>(p, k.executor, k.listener, k.recorder);
      k.link->establish(sched.now() + 5s, [&k](const Status& s) {
        ++k.ups;
        k.up = s;
      });
    }
    pump();
    for (int r = 0; r < ranks; ++r) {
      REQUIRE(rank[static_cast<size_t>(r)].ups == 1);
      REQUIRE(rank[static_cast<size_t>(r)].up.ok());
    }
  }
  ReliableLink& link(int r) { return *rank[static_cast<size_t>(r)].link; }
  hcomm::FailoverStats stats(int r) { return rank[static_cast<size_t>(r)].recorder.snapshot(); }
  /// Runs tasks and moves the frames that are not held until nothing moves.
  void pump() {
    for (int i = 0; i < 100000; ++i) {
      bool any = sched.run_ready();
      any |= net.deliver_unheld();
      if (!any) return;
    }
    FAIL("the fake network does not settle");
  }
  /// Moves the clock on by `d` in 10 ms steps, pumping (and calling `each`) at every step.
  void advance(std::chrono::milliseconds d, const std::function<void()>& each = {}) {
    for (auto t = 0ms; t < d; t += 10ms) {
      sched.set_now(sched.now() + 10ms);
      if (each) each();
      pump();
    }
  }

  ManualScheduler sched;
  FakeNet net;
  std::array<Rank, 2> rank;
};

/// The data frames in `link`'s outbox.
inline std::vector<const WireFrame*> data_in(FakeLink& link) {
  std::vector<const WireFrame*> out;
  for (const WireFrame& f : link.outbox())
    if (f.kind() == FrameKind::data) out.push_back(&f);
  return out;
}

/// A channel frame carrying `m`, as it would arrive from the peer.
inline WireFrame channel_frame(const ChannelMessage& m) {
  EncodedChannelMessage e = hcomm::failover::encode(m, kComm);
  WireFrame f;
  f.header = e.header;
  const auto* p = reinterpret_cast<const std::byte*>(e.payload.data());
  f.payload.assign(p, p + e.payload.size());
  return f;
}

inline ChannelMessage ack(uint64_t cumulative, std::vector<AckRange> ranges = {}) {
  ChannelMessage m;
  m.kind = ChannelMessage::Kind::ack;
  m.cumulative = cumulative;
  m.ranges = std::move(ranges);
  return m;
}

/// The acknowledgements in `link`'s outbox, decoded.
inline std::vector<ChannelMessage> acks_in(FakeLink& link) {
  std::vector<ChannelMessage> out;
  for (const WireFrame& f : link.outbox()) {
    if (f.kind() != FrameKind::channel) continue;
    auto m = hcomm::failover::decode(f.header, f.text());
    REQUIRE(m.ok());
    if (m->kind == ChannelMessage::Kind::ack) out.push_back(m.value());
  }
  return out;
}

inline bool is_data(const WireFrame& f) {
  return f.kind() == FrameKind::data;
}
inline bool is_channel(const WireFrame& f) {
  return f.kind() == FrameKind::channel;
}

}  // namespace hcomm::fake
