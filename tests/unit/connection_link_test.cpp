// ConnectionLink: hcomm's frames over an application's message Connection. Two links, each on its
// own progress engine (two ranks), over the example Unix-socket connection built from a
// socketpair; 4 KiB messages force every sizeable frame into many pieces.
#include <doctest/doctest.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "examples/unix_protocol.hpp"
#include "transport/connection_link.hpp"
#include "transport/progress_engine.hpp"

using hcomm::Status;
using hcomm::transport::ConnectionLink;
using hcomm::transport::FrameHeader;
using hcomm::transport::FrameKind;
using hcomm::transport::LinkObserver;
using hcomm::transport::MatchKey;
using hcomm::transport::ProgressEngine;
using hcomm::transport::RecvRequest;
using hcomm::transport::SendRequest;
using namespace std::chrono_literals;

namespace {

constexpr uint32_t kComm = 7;
constexpr size_t kMessage = 4096;

/// Runs `fn` on `engine` (the calling thread drives it) and waits for it, at most 5 s.
void on_engine(ProgressEngine& engine, const std::function<void()>& fn) {
  std::atomic<bool> done{false};
  engine.post(
      [&] {
        fn();
        done = true;
      },
      hcomm::transport::ProgressEngine::Waker::caller);
  REQUIRE(engine.drive_until([&] { return done.load(); }, ProgressEngine::Clock::now() + 5s));
}

/// Drives `engine` until `cond`, at most 5 s.
bool wait_for(ProgressEngine& engine, const std::function<bool()>& cond) {
  return engine.drive_until(cond, ProgressEngine::Clock::now() + 5s);
}

std::vector<std::byte> random_bytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(gen());
  return v;
}

FrameHeader data_header(uint64_t op_seq, uint32_t step, size_t length) {
  FrameHeader h;
  h.comm_id = kComm;
  h.op_seq = op_seq;
  h.step = step;
  h.length = length;
  h.op_bytes = length;
  return h;
}

struct TestSend final : SendRequest {
  TestSend(const FrameHeader& h, const void* data) {
    header = h;
    payload = data;
  }
  void on_sent(const Status& st) override {
    status = st;
    done = true;
  }
  std::atomic<bool> done{false};
  Status status;
};

struct TestRecv final : RecvRequest {
  TestRecv(uint64_t op_seq, uint32_t step, size_t capacity, bool in_pieces)
      : buffer(capacity), pieces_wanted(in_pieces) {
    key = MatchKey{kComm, op_seq, step, 0};
  }
  Status accept(const FrameHeader& h) override {
    seen = h;
    if (h.length > buffer.size()) return {hcomm::HCOMM_ERR_INVALID_ARG, "too large"};
    return {};
  }
  void* destination() override { return pieces_wanted ? nullptr : buffer.data(); }
  void on_piece(size_t offset, const void* data, size_t bytes) override {
    pieces.emplace_back(offset, bytes);
    std::memcpy(buffer.data() + offset, data, bytes);
  }
  size_t piece_granularity() const override { return 4; }
  void on_received(const Status& st) override {
    status = st;
    done = true;
  }
  std::vector<std::byte> buffer;
  bool pieces_wanted;
  FrameHeader seen;
  std::vector<std::pair<size_t, size_t>> pieces;
  std::atomic<bool> done{false};
  Status status;
};

struct Observer final : LinkObserver {
  void on_remote_abort(int peer, uint32_t comm_id, uint64_t op_seq,
                       const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mutex);
    aborts.emplace_back(peer, comm_id, op_seq, reason);
  }
  bool should_drop(const FrameHeader& header) override {
    std::lock_guard<std::mutex> lock(mutex);
    return aborted_ops.count(header.op_seq) != 0;
  }
  void on_link_failed(int peer, const Status& st, bool is_graceful) override {
    std::lock_guard<std::mutex> lock(mutex);
    failed_peer = peer;
    status = st;
    graceful = is_graceful;
    failures++;
  }
  size_t abort_count() const {
    std::lock_guard<std::mutex> lock(mutex);
    return aborts.size();
  }

  mutable std::mutex mutex;
  std::vector<std::tuple<int, uint32_t, uint64_t, std::string>> aborts;
  std::set<uint64_t> aborted_ops;
  std::atomic<int> failures{0};
  int failed_peer = -1;
  Status status;
  bool graceful = false;
};

/// Hides the wrapped connection's fd: the link must poll it.
class PolledConnection final : public hcomm::Connection {
 public:
  explicit PolledConnection(std::unique_ptr<hcomm::Connection> inner) : inner_(std::move(inner)) {}
  Status send(const hcomm::ConstBuffer* parts, size_t count) override {
    return inner_->send(parts, count);
  }
  hcomm::Expected<std::optional<std::vector<std::byte>>> receive() override {
    return inner_->receive();
  }

 private:
  std::unique_ptr<hcomm::Connection> inner_;
};

/// Fails receive() with an I/O error once `fail_now` is set.
class FaultyConnection final : public hcomm::Connection {
 public:
  explicit FaultyConnection(std::unique_ptr<hcomm::Connection> inner, std::atomic<bool>* fail_now)
      : inner_(std::move(inner)), fail_now_(fail_now) {}
  Status send(const hcomm::ConstBuffer* parts, size_t count) override {
    return inner_->send(parts, count);
  }
  hcomm::Expected<std::optional<std::vector<std::byte>>> receive() override {
    if (fail_now_->load()) return Status{hcomm::HCOMM_ERR_TRANSPORT, "injected receive error"};
    return inner_->receive();
  }
  int event_fd() const override { return -1; }

 private:
  std::unique_ptr<hcomm::Connection> inner_;
  std::atomic<bool>* fail_now_;
};

/// One rank of the pair: its engine, observer and link.
struct Side {
  int rank = -1;
  ProgressEngine engine;
  Observer observer;
  std::atomic<uint64_t> bytes_sent{0};
  std::unique_ptr<ConnectionLink> link;
};

enum class Mode { event_fd, polled };

/// Ranks 0 and 1 linked through a socketpair.
struct Pair {
  explicit Pair(Mode mode = Mode::event_fd, size_t max_message = kMessage,
                std::atomic<bool>* fail_b = nullptr) {
    int fds[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    make(a, 0, 1, fds[0], mode, max_message, nullptr);
    make(b, 1, 0, fds[1], mode, max_message, fail_b);
  }
  ~Pair() {
    // Goodbyes first, so that neither side reports the other as lost.
    for (Side* side : {&a, &b})
      on_engine(side->engine, [&] {
        if (side->link) side->link->close();
      });
    on_engine(a.engine, [&] { a.link.reset(); });
    on_engine(b.engine, [&] { b.link.reset(); });
  }

  static void make(Side& side, int me, int peer, int fd, Mode mode, size_t max_message,
                   std::atomic<bool>* fail) {
    std::unique_ptr<hcomm::Connection> c = std::make_unique<example::UnixSocketConnection>(fd);
    if (mode == Mode::polled) c = std::make_unique<PolledConnection>(std::move(c));
    if (fail != nullptr) c = std::make_unique<FaultyConnection>(std::move(c), fail);
    hcomm::ProtocolCaps caps;
    caps.max_message_bytes = max_message;
    caps.detects_peer_failure = true;
    side.rank = me;
    on_engine(side.engine, [&] {
      side.link = std::make_unique<ConnectionLink>(
          side.engine, side.observer, ConnectionLink::Identity{me, peer, kComm, &side.bytes_sent},
          std::move(c), caps, "unix");
    });
  }

  Side a, b;
};

/// Sends `payload` from `from` to `to` as (op, step) into a receive posted first; checks it.
void exchange(Side& from, Side& to, uint64_t op, size_t bytes, bool in_pieces) {
  auto payload = random_bytes(bytes, static_cast<unsigned>(op));
  TestRecv recv(op, 0, bytes, in_pieces);
  TestSend send(data_header(op, 0, bytes), payload.data());
  on_engine(to.engine, [&] { to.link->post_recv(&recv); });
  on_engine(from.engine, [&] { from.link->post_send(&send); });
  REQUIRE(wait_for(to.engine, [&] { return recv.done.load(); }));
  REQUIRE(wait_for(from.engine, [&] { return send.done.load(); }));
  CHECK(send.status.ok());
  CHECK(recv.status.ok());
  CHECK(recv.seen.op_seq == op);
  CHECK(recv.seen.src_rank == from.rank);
  CHECK(recv.buffer == payload);
}

}  // namespace

TEST_CASE("ConnectionLink: a frame of many messages lands bit-exact in destination()") {
  Pair pair;
  const size_t bytes = (size_t{1} << 20) + 123;  // ~260 messages, an odd tail
  exchange(pair.a, pair.b, 1, bytes, /*in_pieces=*/false);
  exchange(pair.b, pair.a, 2, bytes, false);  // and the other way
  CHECK(pair.a.bytes_sent.load() == bytes);
  CHECK(pair.b.bytes_sent.load() == bytes);
  // Frames of 0 bytes and of exactly one message's worth.
  exchange(pair.a, pair.b, 3, 0, false);
  exchange(pair.a, pair.b, 4, kMessage - sizeof(FrameHeader), false);
}

TEST_CASE("ConnectionLink: on_piece gets the payload in order, in whole aligned pieces") {
  Pair pair;
  const size_t bytes = 100003;
  auto payload = random_bytes(bytes, 11);
  TestRecv recv(5, 2, bytes, /*in_pieces=*/true);
  TestSend send(data_header(5, 2, bytes), payload.data());
  on_engine(pair.b.engine, [&] { pair.b.link->post_recv(&recv); });
  on_engine(pair.a.engine, [&] { pair.a.link->post_send(&send); });
  REQUIRE(wait_for(pair.b.engine, [&] { return recv.done.load(); }));
  REQUIRE(recv.status.ok());
  CHECK(recv.buffer == payload);
  REQUIRE(recv.pieces.size() > 1);
  size_t next = 0;
  for (size_t i = 0; i < recv.pieces.size(); ++i) {
    auto [offset, n] = recv.pieces[i];
    CHECK(offset == next);
    CHECK(n <= kMessage);
    if (i + 1 < recv.pieces.size()) CHECK(n % 64 == 0);
    next = offset + n;
  }
  CHECK(next == bytes);
}

TEST_CASE("ConnectionLink: a frame that arrives before its receive is delivered when posted") {
  Pair pair;
  const size_t early_bytes = 50000, marker_bytes = 1000;
  auto early = random_bytes(early_bytes, 21);
  auto marker = random_bytes(marker_bytes, 22);
  TestSend s10(data_header(10, 0, early_bytes), early.data());
  TestSend s12(data_header(12, 0, early_bytes), early.data());
  TestSend s11(data_header(11, 0, marker_bytes), marker.data());
  TestRecv r11(11, 0, marker_bytes, false);
  on_engine(pair.b.engine, [&] { pair.b.link->post_recv(&r11); });
  on_engine(pair.a.engine, [&] {
    pair.a.link->post_send(&s10);
    pair.a.link->post_send(&s12);
    pair.a.link->post_send(&s11);
  });
  // Messages are ordered: once frame 11 is in, frames 10 and 12 are stored aside.
  REQUIRE(wait_for(pair.b.engine, [&] { return r11.done.load(); }));
  CHECK(r11.buffer == marker);
  TestRecv r10(10, 0, early_bytes, /*in_pieces=*/false);
  TestRecv r12(12, 0, early_bytes, /*in_pieces=*/true);
  on_engine(pair.b.engine, [&] {
    pair.b.link->post_recv(&r10);
    pair.b.link->post_recv(&r12);
  });
  // At once, from the stored copies.
  CHECK(r10.done.load());
  CHECK(r10.status.ok());
  CHECK(r10.buffer == early);
  CHECK(r12.done.load());
  CHECK(r12.status.ok());
  CHECK(r12.buffer == early);
}

TEST_CASE("ConnectionLink: a burst of frames, more than a round's worth, all arrive") {
  Pair pair;
  constexpr int kFrames = 500;
  auto payload = random_bytes(200, 31);
  std::vector<std::unique_ptr<TestRecv>> recvs;
  std::vector<std::unique_ptr<TestSend>> sends;
  for (int i = 0; i < kFrames; ++i) {
    recvs.push_back(std::make_unique<TestRecv>(1000 + i, 0, payload.size(), i % 2 == 0));
    sends.push_back(
        std::make_unique<TestSend>(data_header(1000 + i, 0, payload.size()), payload.data()));
  }
  on_engine(pair.b.engine, [&] {
    for (auto& r : recvs) pair.b.link->post_recv(r.get());
  });
  on_engine(pair.a.engine, [&] {
    for (auto& s : sends) pair.a.link->post_send(s.get());
  });
  // Rank 1's own engine thread does the receiving: nobody drives it here.
  const auto until = std::chrono::steady_clock::now() + 5s;
  auto all_done = [&] {
    return std::all_of(recvs.begin(), recvs.end(), [](auto& r) { return r->done.load(); });
  };
  while (!all_done() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  REQUIRE(all_done());
  for (auto& r : recvs) {
    CHECK(r->status.ok());
    CHECK(r->buffer == payload);
  }
}

TEST_CASE("ConnectionLink: abort frames reach the observer, aborted operations are dropped") {
  Pair pair;
  on_engine(pair.a.engine, [&] { pair.a.link->send_abort(kComm, 77, "rank 0 ran out of memory"); });
  REQUIRE(wait_for(pair.b.engine, [&] { return pair.b.observer.abort_count() == 1; }));
  {
    std::lock_guard<std::mutex> lock(pair.b.observer.mutex);
    CHECK(pair.b.observer.aborts[0] ==
          std::make_tuple(0, kComm, uint64_t{77}, std::string("rank 0 ran out of memory")));
    pair.b.observer.aborted_ops.insert(99);
  }
  // A frame of aborted operation 99 is dropped; the next one still arrives.
  auto payload = random_bytes(20000, 3);
  TestSend dropped(data_header(99, 0, payload.size()), payload.data());
  on_engine(pair.a.engine, [&] { pair.a.link->post_send(&dropped); });
  exchange(pair.a, pair.b, 100, 3000, false);
  TestRecv late(99, 0, payload.size(), false);
  on_engine(pair.b.engine, [&] { pair.b.link->post_recv(&late); });
  CHECK_FALSE(late.done.load());
  on_engine(pair.b.engine, [&] { CHECK(pair.b.link->cancel_recv(&late)); });
  CHECK(pair.b.observer.failures.load() == 0);
}

TEST_CASE("ConnectionLink: a peer that goes away fails posted receives with PEER_LOST") {
  Pair pair;
  TestRecv recv(1, 0, 100, false);
  on_engine(pair.b.engine, [&] { pair.b.link->post_recv(&recv); });
  // Rank 0 vanishes without a goodbye: its socket closes.
  on_engine(pair.a.engine, [&] { pair.a.link.reset(); });
  REQUIRE(wait_for(pair.b.engine, [&] { return recv.done.load(); }));
  CHECK(recv.status.code() == hcomm::HCOMM_ERR_PEER_LOST);
  REQUIRE(wait_for(pair.b.engine, [&] { return pair.b.observer.failures.load() == 1; }));
  CHECK(pair.b.observer.failed_peer == 0);
  CHECK(pair.b.observer.status.code() == hcomm::HCOMM_ERR_PEER_LOST);
  CHECK(pair.b.observer.status.message().find("unix (rank 0)") != std::string::npos);
  CHECK_FALSE(pair.b.observer.graceful);
  on_engine(pair.b.engine, [&] {
    CHECK_FALSE(pair.b.link->is_up());
    TestRecv after(2, 0, 100, false);
    pair.b.link->post_recv(&after);
    CHECK(after.done.load());
    CHECK(after.status.code() == hcomm::HCOMM_ERR_PEER_LOST);
  });
}

TEST_CASE("ConnectionLink: close() is a goodbye: the other side fails gracefully") {
  Pair pair;
  const size_t bytes = 9000;
  auto payload = random_bytes(bytes, 5);
  TestSend last(data_header(3, 0, bytes), payload.data());
  TestRecv never(4, 0, 100, false);
  on_engine(pair.b.engine, [&] { pair.b.link->post_recv(&never); });
  on_engine(pair.a.engine, [&] {
    pair.a.link->post_send(&last);
    pair.a.link->close();
    CHECK_FALSE(pair.a.link->is_up());
    TestSend after(data_header(5, 0, bytes), payload.data());
    pair.a.link->post_send(&after);
    CHECK(after.done.load());
    CHECK(after.status.code() == hcomm::HCOMM_ERR_ABORTED);
  });
  CHECK(last.status.ok());
  REQUIRE(wait_for(pair.b.engine, [&] { return pair.b.observer.failures.load() == 1; }));
  CHECK(pair.b.observer.graceful);
  CHECK(pair.b.observer.status.code() == hcomm::HCOMM_ERR_PEER_LOST);
  CHECK(never.done.load());
  CHECK(never.status.code() == hcomm::HCOMM_ERR_PEER_LOST);
  on_engine(pair.b.engine, [&] {
    // What arrived before the goodbye is still delivered; sends to a departed peer count as done.
    TestRecv recv(3, 0, bytes, false);
    pair.b.link->post_recv(&recv);
    CHECK(recv.done.load());
    CHECK(recv.status.ok());
    CHECK(recv.buffer == payload);
    TestSend reply(data_header(6, 0, bytes), payload.data());
    pair.b.link->post_send(&reply);
    CHECK(reply.done.load());
    CHECK(reply.status.ok());
  });
  CHECK(pair.a.observer.failures.load() == 0);  // the closing side is not told
}

TEST_CASE("ConnectionLink: a connection without an event fd is polled") {
  Pair pair(Mode::polled);
  exchange(pair.a, pair.b, 1, 300000, false);
  exchange(pair.b, pair.a, 2, 300000, true);
  // Nobody drives rank 1's engine now: its own thread, asleep, still looks every millisecond.
  auto payload = random_bytes(5000, 9);
  TestRecv recv(3, 0, payload.size(), false);
  TestSend send(data_header(3, 0, payload.size()), payload.data());
  on_engine(pair.b.engine, [&] { pair.b.link->post_recv(&recv); });
  std::this_thread::sleep_for(50ms);  // let its engine go to sleep
  on_engine(pair.a.engine, [&] { pair.a.link->post_send(&send); });
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!recv.done.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  REQUIRE(recv.done.load());
  CHECK(recv.buffer == payload);
}

TEST_CASE("ConnectionLink: a receive error fails the link with HCOMM_ERR_TRANSPORT") {
  std::atomic<bool> fail_b{false};
  Pair pair(Mode::event_fd, kMessage, &fail_b);
  TestRecv recv(1, 0, 100, false);
  on_engine(pair.b.engine, [&] { pair.b.link->post_recv(&recv); });
  fail_b = true;
  REQUIRE(wait_for(pair.b.engine, [&] { return recv.done.load(); }));
  CHECK(recv.status.code() == hcomm::HCOMM_ERR_TRANSPORT);
  REQUIRE(wait_for(pair.b.engine, [&] { return pair.b.observer.failures.load() == 1; }));
  const std::string& message = pair.b.observer.status.message();
  CHECK(message.find("unix (rank 0)") != std::string::npos);
  CHECK(message.find("injected receive error") != std::string::npos);
}

TEST_CASE("ConnectionLink: caps, description, and a protocol whose messages are too small") {
  Pair pair;
  on_engine(pair.a.engine, [&] {
    auto caps = pair.a.link->caps();
    CHECK(std::string(caps.medium) == "unix");
    CHECK(caps.max_frame_bytes == SIZE_MAX);
    CHECK_FALSE(caps.one_sided);
    CHECK(caps.detects_peer_failure);
    CHECK(pair.a.link->describe() == "unix (rank 1)");
    CHECK(pair.a.link->is_up());
  });
  ProgressEngine engine;
  Observer observer;
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  ::close(fds[1]);
  hcomm::ProtocolCaps caps;
  caps.max_message_bytes = 1024;
  on_engine(engine, [&] {
    ConnectionLink link(engine, observer, ConnectionLink::Identity{0, 1, kComm, nullptr},
                        std::make_unique<example::UnixSocketConnection>(fds[0]), caps, "tiny");
    CHECK_FALSE(link.is_up());
    CHECK(link.error().code() == hcomm::HCOMM_ERR_INVALID_ARG);
    CHECK(link.error().message().find("4096") != std::string::npos);
  });
  CHECK(observer.failures.load() == 0);
}

TEST_CASE("example UnixSocketProtocol: three ranks pair up and exchange messages") {
  constexpr int kRanks = 3;
  const uint64_t uid = 0x5eed0000u + static_cast<uint64_t>(::getpid());
  std::vector<example::UnixSocketProtocol> protocols(kRanks);
  std::vector<std::string> addresses;
  for (int r = 0; r < kRanks; ++r) {
    hcomm::ProtocolContext context;
    context.rank = r;
    context.world_size = kRanks;
    context.comm_uid = uid;
    context.host_id = "this-host";
    auto address = protocols[r].open(context);
    REQUIRE(address.ok());
    addresses.push_back(*address);
    CHECK(protocols[r].reaches((r + 1) % kRanks, "this-host", "x"));
    CHECK_FALSE(protocols[r].reaches((r + 1) % kRanks, "another-host", "x"));
  }
  CHECK(protocols[0].caps().same_host_only);
  // Every rank connects to every other in rank order, as hcomm does, each on its own thread.
  using Connections = std::vector<std::unique_ptr<hcomm::Connection>>;
  std::vector<std::future<Connections>> ranks;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  for (int r = 0; r < kRanks; ++r) {
    ranks.push_back(std::async(std::launch::async, [&, r] {
      Connections mine(kRanks);
      for (int p = 0; p < kRanks; ++p) {
        if (p == r) continue;
        auto c = protocols[r].connect(p, addresses[p], deadline);
        if (c.ok()) mine[p] = std::move(*c);
      }
      return mine;
    }));
  }
  std::vector<Connections> all;
  for (auto& f : ranks) all.push_back(f.get());
  for (int r = 0; r < kRanks; ++r) {
    for (int p = 0; p < kRanks; ++p) {
      if (p == r) continue;
      CAPTURE(r);
      CAPTURE(p);
      REQUIRE(all[r][p]);
      // A message from r to p names both, in two parts.
      const int32_t head = r;
      const int32_t tail = p;
      hcomm::ConstBuffer parts[2] = {{&head, sizeof(head)}, {&tail, sizeof(tail)}};
      REQUIRE(all[r][p]->send(parts, 2).ok());
      std::optional<std::vector<std::byte>> got;
      const auto until = std::chrono::steady_clock::now() + 5s;
      while (!got && std::chrono::steady_clock::now() < until) {
        auto m = all[p][r]->receive();
        REQUIRE(m.ok());
        got = std::move(*m);
      }
      REQUIRE(got);
      REQUIRE(got->size() == 8);
      int32_t seen[2];
      std::memcpy(seen, got->data(), 8);
      CHECK(seen[0] == r);
      CHECK(seen[1] == p);
    }
  }
  // Closing one end is seen as PEER_LOST at the other.
  all[0][1].reset();
  hcomm::Expected<std::optional<std::vector<std::byte>>> m =
      std::optional<std::vector<std::byte>>();
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (m.ok() && std::chrono::steady_clock::now() < until) m = all[1][0]->receive();
  CHECK(m.status().code() == hcomm::HCOMM_ERR_PEER_LOST);
}
