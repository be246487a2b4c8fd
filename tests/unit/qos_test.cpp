// QoS: the traffic class (QosClass parse/validate/to_string), the share allocator (minimums,
// strict priority, weighted water-filling up to the caps and demands, work conservation), the
// token bucket with a fake clock, and the send gate on a real progress engine with a fake link
// (pacing at the class's rate, the Scheduler's order and the default one, remove_class, the host
// board's traffic stamps, kernel pacing requests, PacedLink's bypass of non-data frames).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "hcomm/qos.hpp"
#include "qos/host_board.hpp"
#include "qos/send_gate.hpp"
#include "qos/share_allocator.hpp"
#include "qos/token_bucket.hpp"
#include "transport/link.hpp"
#include "transport/progress_engine.hpp"
#include "transport/shm/shared_segment.hpp"

using hcomm::HCOMM_ERR_INVALID_ARG;
using hcomm::QosClass;
using hcomm::QosTask;
using hcomm::Scheduler;
using hcomm::Status;
using hcomm::qos::allocate_shares;
using hcomm::qos::ClassDemand;
using hcomm::qos::HostBoard;
using hcomm::qos::PacedLink;
using hcomm::qos::SendGate;
using hcomm::qos::TokenBucket;
using hcomm::transport::FrameHeader;
using hcomm::transport::FrameKind;
using hcomm::transport::ProgressEngine;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---------------------------------------------------------------------------------------------
// QosClass helpers

QosClass qos(int min, int max, int priority) {
  QosClass q;
  q.min_rate = min;
  q.max_rate = max;
  q.priority = priority;
  return q;
}

/// parse() must accept `spec` as `want`.
void check_parsed(const std::string& spec, const QosClass& want) {
  CAPTURE(spec);
  const auto q = QosClass::parse(spec);
  REQUIRE(q.ok());
  CHECK(q.value() == want);
}

/// parse() must fail with HCOMM_ERR_INVALID_ARG and a message containing `why`.
void check_rejected(const std::string& spec, const std::string& why) {
  CAPTURE(spec);
  const auto q = QosClass::parse(spec);
  CHECK_FALSE(q.ok());
  if (q.ok()) return;
  CHECK(q.status().code() == HCOMM_ERR_INVALID_ARG);
  CAPTURE(q.status().message());
  CHECK(contains(q.status().message(), why));
}

// ---------------------------------------------------------------------------------------------
// Share allocator helpers

ClassDemand demand(int min, int max, int priority, bool active) {
  return ClassDemand{min, max, priority, active};
}

double active_sum(const std::vector<ClassDemand>& classes, const std::vector<double>& rates) {
  double sum = 0;
  for (size_t i = 0; i < classes.size(); ++i)
    if (classes[i].active) sum += rates[i];
  return sum;
}

// ---------------------------------------------------------------------------------------------
// Token bucket helpers

Clock::time_point at_ms(double ms) {
  return Clock::time_point{} + std::chrono::hours(1) +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// ---------------------------------------------------------------------------------------------
// Send gate helpers: a fake link that records what it was given, on a real progress engine.

/// send_gate.cpp's kBurstBytes: what a class may send ahead of its rate after an idle spell.
constexpr double kGateBurst = 256 * 1024;

struct FakeRequest final : hcomm::transport::SendRequest {
  FakeRequest(int tag_, uint64_t length, FrameKind kind) : tag(tag_) {
    header.kind = static_cast<uint8_t>(kind);
    header.length = length;
  }
  void on_sent(const Status& status) override {
    if (status.ok()) sent.fetch_add(1);
  }
  const int tag;
  std::atomic<int> sent{0};
};

struct SentFrame {
  int tag;
  uint8_t kind;
  uint64_t length;
  Clock::time_point when;
};

class FakeLink final : public hcomm::transport::Link {
 public:
  int peer() const override { return 3; }
  bool is_up() const override { return true; }
  const std::string& describe() const override { return name_; }
  hcomm::transport::LinkCaps caps() const override {
    hcomm::transport::LinkCaps c;
    c.medium = "fake";
    c.max_frame_bytes = 1 << 20;
    return c;
  }
  void post_send(hcomm::transport::SendRequest* request) override {
    auto* r = static_cast<FakeRequest*>(request);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sent_.push_back({r->tag, r->header.kind, r->header.length, Clock::now()});
    }
    r->on_sent(Status{});
    if (hook) hook(r);  // what a completion callback would do: post the next frame, at once
  }
  void post_recv(hcomm::transport::RecvRequest*) override {}
  bool cancel_recv(hcomm::transport::RecvRequest*) override { return false; }
  void send_channel(const FrameHeader& header, std::string payload) override {
    std::lock_guard<std::mutex> lock(mutex_);
    channel_.push_back({header, std::move(payload)});
  }
  void set_traffic_class(int tos) override { tos_ = tos; }
  void set_pacing_rate(double bytes_per_second) override {
    std::lock_guard<std::mutex> lock(mutex_);
    pacing_.push_back(bytes_per_second);
  }
  void close() override { closed_ = true; }
  void abandon() override {}
  const Status& error() const override { return error_; }

  std::vector<SentFrame> sent() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sent_;
  }
  std::vector<int> tags() const {
    std::vector<int> out;
    for (const SentFrame& f : sent()) out.push_back(f.tag);
    return out;
  }
  size_t count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sent_.size();
  }
  std::vector<std::pair<FrameHeader, std::string>> channel() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return channel_;
  }
  std::vector<double> pacing() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return pacing_;
  }

  std::function<void(FakeRequest*)> hook;  // engine thread
  std::atomic<int> tos_{-1};
  std::atomic<bool> closed_{false};

 private:
  std::string name_ = "fake link (rank 3)";
  Status error_;
  mutable std::mutex mutex_;
  std::vector<SentFrame> sent_;
  std::vector<std::pair<FrameHeader, std::string>> channel_;
  std::vector<double> pacing_;
};

/// The link, the requests, the engine and the gate, torn down in a safe order: the engine stops
/// first (its timers, which point into the gate, are dropped), then the gate, the requests and
/// the link.
struct Rig {
  FakeLink link;
  std::deque<FakeRequest> requests;
  std::unique_ptr<ProgressEngine> engine = std::make_unique<ProgressEngine>();
  std::unique_ptr<SendGate> gate = std::make_unique<SendGate>(*engine);

  ~Rig() { engine.reset(); }

  FakeRequest* request(int tag, uint64_t length, FrameKind kind = FrameKind::data) {
    requests.emplace_back(tag, length, kind);
    return &requests.back();
  }
  /// Runs `f` on the engine thread and waits for it.
  void run(const std::function<void()>& f) {
    std::promise<void> done;
    auto finished = done.get_future();
    engine->post([&] {
      f();
      done.set_value();
    });
    finished.wait();
  }
};

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds within) {
  const auto end = Clock::now() + within;
  while (!cond()) {
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(200us);
  }
  return true;
}

int64_t ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// A host board of this test process's own (a host id nobody else uses), with one slot claimed;
/// its /dev/shm segment is removed at the end.
struct TestBoard {
  TestBoard() {
    host = "hcomm-unit-test-qos-" + std::to_string(::getpid());
    auto got = HostBoard::get(host);
    REQUIRE(got.ok());
    board = got.value();
    auto claimed = board->claim(5, QosClass{});
    REQUIRE(claimed.ok());
    slot = claimed.value();
  }
  ~TestBoard() {
    board->release(slot);
    // HostBoard::get() names the segment "hcomm-qos...-<hash of the host id>": remove ours.
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx",
                  static_cast<unsigned long long>(std::hash<std::string>()(host)));
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator("/dev/shm", ec)) {
      const std::string name = f.path().filename().string();
      if (name.rfind("hcomm-qos", 0) == 0 && name.size() > 16 &&
          name.compare(name.size() - 16, 16, hex) == 0)
        hcomm::transport::shm::SharedSegment::unlink(name);
    }
  }
  HostBoard::Entry entry(int64_t now_ns) {
    for (const HostBoard::Entry& e : board->read(now_ns))
      if (e.slot == slot) return e;
    return {};
  }
  std::string host;
  std::shared_ptr<HostBoard> board;
  int slot = -1;
};

/// set_scheduler() for a test's duration; the default order again afterwards, whatever happens.
struct SchedulerGuard {
  explicit SchedulerGuard(std::shared_ptr<Scheduler> s) { hcomm::set_scheduler(std::move(s)); }
  ~SchedulerGuard() { hcomm::set_scheduler(nullptr); }
};

/// Leaves the order as it is (the gate's: classes by id), and records what it saw.
struct KeepOrder : Scheduler {
  void schedule(std::vector<QosTask>& tasks) override { seen.push_back(tasks); }
  std::vector<std::vector<QosTask>> seen;  // engine thread; read after the run
};

struct Reverse : Scheduler {
  void schedule(std::vector<QosTask>& tasks) override {
    ++calls;
    std::reverse(tasks.begin(), tasks.end());
  }
  std::atomic<int> calls{0};
};

/// Classes 1 and 2 each get three frames queued at once (tags 11,12,13 and 21,22,23, posted
/// alternately, class `first` first), while a trigger class's frame is being sent: the gate's
/// loop then picks them one by one in its order. Returns the order the link saw.
std::vector<int> queued_order(Rig& rig, int priority1, int priority2, uint64_t first = 1) {
  constexpr uint64_t kTrigger = 100;
  FakeRequest* trigger = rig.request(0, 100);
  std::vector<FakeRequest*> of1, of2;
  for (int i = 1; i <= 3; ++i) {
    of1.push_back(rig.request(10 + i, 1000));
    of2.push_back(rig.request(20 + i, 2000));
  }
  bool fired = false;
  rig.link.hook = [&, first](FakeRequest* r) {
    if (r != trigger || fired) return;
    fired = true;
    for (int i = 0; i < 3; ++i) {
      // Distinct queueing times (the default order's tie-break within a priority).
      rig.gate->post(first, &rig.link, first == 1 ? of1[i] : of2[i]);
      std::this_thread::sleep_for(50us);
      rig.gate->post(first == 1 ? 2 : 1, &rig.link, first == 1 ? of2[i] : of1[i]);
      std::this_thread::sleep_for(50us);
    }
  };
  rig.run([&] {
    rig.gate->add_class(1, priority1, 1e9, nullptr, -1);
    rig.gate->add_class(2, priority2, 1e9, nullptr, -1);
    rig.gate->add_class(kTrigger, 0, 1e9, nullptr, -1);
    rig.gate->post(kTrigger, &rig.link, trigger);
  });
  REQUIRE(eventually([&] { return rig.link.count() == 7; }, 2000ms));
  rig.run([&] { rig.link.hook = nullptr; });
  return rig.link.tags();
}

}  // namespace

// =============================================================================================
// QosClass

TEST_CASE("qos: parse reads every key and leaves the ones not given at their defaults") {
  check_parsed("min=30,max=70,priority=2", qos(30, 70, 2));      // all three
  check_parsed("priority=7,max=100,min=100", qos(100, 100, 7));  // any order
  check_parsed("min=25", qos(25, 100, 0));
  check_parsed("max=40", qos(0, 40, 0));
  check_parsed("priority=5", qos(0, 100, 5));
  check_parsed("min=10,prio=3", qos(10, 100, 3));        // prio is an alias of priority
  check_parsed("min=0,max=1,priority=0", qos(0, 1, 0));  // the bounds are accepted
  // The empty spec is the default class.
  check_parsed("", QosClass{});
  CHECK(QosClass::parse("").value().is_default());
}

TEST_CASE("qos: parse rejects garbage, unknown keys and out-of-range values, saying which") {
  check_rejected("min", "'min' is not key=value");
  check_rejected("min=30,max", "'max' is not key=value");
  check_rejected("min=", "'' is not a whole number");
  check_rejected("min=abc", "'abc' is not a whole number");
  check_rejected("min=3.5", "'3.5' is not a whole number");
  check_rejected("max=0x40", "'0x40' is not a whole number");
  check_rejected("min=30x", "'30x' is not a whole number");
  check_rejected("speed=3", "unknown key 'speed'");
  check_rejected("MIN=30", "unknown key 'MIN'");
  check_rejected("min=30;max=70", "'30;max=70' is not a whole number");
  check_rejected("min=101", "min must be a percentage, 0..100");
  check_rejected("min=-1", "min must be a percentage, 0..100");
  check_rejected("max=0", "max must be a percentage, 1..100");
  check_rejected("max=101", "max must be a percentage, 1..100");
  check_rejected("min=80,max=50", "min must not exceed max");
  check_rejected("priority=8", "priority must be 0..7");
  check_rejected("prio=-1", "priority must be 0..7");
  // The parse errors quote the spec and say what is expected.
  const auto q = QosClass::parse("bogus=1");
  REQUIRE_FALSE(q.ok());
  CHECK(contains(q.status().message(), "'bogus=1'"));
  CHECK(contains(q.status().message(), "expected keys min, max, priority"));
}

TEST_CASE("qos: parse rejects whitespace around keys and after values") {
  check_rejected("min=30, max=70", "unknown key ' max'");
  check_rejected(" min=30", "unknown key ' min'");
  check_rejected("min =30", "unknown key 'min '");
  check_rejected("min=30 ", "'30 ' is not a whole number");
  check_rejected("min=30 max=70", "is not a whole number");
}

TEST_CASE("qos: parse rejects whitespace before a value like it does after one") {
  check_rejected("min= 30", "' 30' is not a whole number");
  check_rejected("priority=\t2", "is not a whole number");
}

// A number is range-checked before it is narrowed to int: 2^32 + 30 must not become 30.
TEST_CASE("qos: parse rejects numbers beyond int instead of wrapping them into range") {
  check_rejected("min=4294967326", "min");        // 2^32 + 30
  check_rejected("priority=4294967298", "prio");  // 2^32 + 2
  check_rejected("max=99999999999999999999", "max");
}

TEST_CASE("qos: validate accepts the bounds and names the field that is out of shape") {
  CHECK(qos(0, 100, 0).validate().ok());
  CHECK(qos(100, 100, 7).validate().ok());
  CHECK(qos(0, 1, 0).validate().ok());
  CHECK(qos(30, 30, 3).validate().ok());

  struct Bad {
    QosClass q;
    const char* why;
  };
  const Bad bad[] = {
      {qos(-1, 100, 0), "min must be a percentage, 0..100"},
      {qos(101, 100, 0), "min must be a percentage, 0..100"},
      {qos(0, 0, 0), "max must be a percentage, 1..100"},
      {qos(0, 101, 0), "max must be a percentage, 1..100"},
      {qos(60, 40, 0), "min must not exceed max"},
      {qos(0, 100, 8), "priority must be 0..7"},
      {qos(0, 100, -1), "priority must be 0..7"},
  };
  for (const Bad& b : bad) {
    const Status st = b.q.validate();
    CAPTURE(b.q.to_string());
    CHECK(st.code() == HCOMM_ERR_INVALID_ARG);
    CHECK(contains(st.message(), b.why));
    CHECK(contains(st.message(), b.q.to_string()));  // the class is named
  }
}

TEST_CASE("qos: to_string spells every field and is_default only holds for the default class") {
  CHECK(qos(30, 70, 2).to_string() == "min=30 max=70 priority=2");
  CHECK(QosClass{}.to_string() == "min=0 max=100 priority=0");
  CHECK(QosClass{}.is_default());
  CHECK_FALSE(qos(1, 100, 0).is_default());
  CHECK_FALSE(qos(0, 99, 0).is_default());
  CHECK_FALSE(qos(0, 100, 1).is_default());
  CHECK(qos(1, 2, 3) == qos(1, 2, 3));
  CHECK_FALSE(qos(1, 2, 3) == qos(1, 2, 4));
}

// =============================================================================================
// Share allocator

TEST_CASE("qos: two active classes whose minimums add up to 100% get exactly their minimums") {
  const std::vector<ClassDemand> c = {demand(30, 100, 0, true), demand(70, 100, 0, true)};
  const auto r = allocate_shares(1000.0, c);
  REQUIRE(r.size() == 2);
  CHECK(r[0] == doctest::Approx(300.0));
  CHECK(r[1] == doctest::Approx(700.0));
}

TEST_CASE("qos: three active classes of minimums 20/30/50 get 20/30/50") {
  const std::vector<ClassDemand> c = {demand(20, 100, 0, true), demand(30, 100, 0, true),
                                      demand(50, 100, 0, true)};
  const auto r = allocate_shares(10e9, c);
  REQUIRE(r.size() == 3);
  CHECK(r[0] == doctest::Approx(2e9));
  CHECK(r[1] == doctest::Approx(3e9));
  CHECK(r[2] == doctest::Approx(5e9));
}

TEST_CASE("qos: the rest of a level is shared in proportion to minimums, a zero minimum weighs 1") {
  SUBCASE("min 30 and min 0") {
    const std::vector<ClassDemand> c = {demand(30, 100, 0, true), demand(0, 100, 0, true)};
    const auto r = allocate_shares(100.0, c);
    // 70 left, weights 30 and 1.
    CHECK(r[0] == doctest::Approx(30.0 + 70.0 * 30.0 / 31.0));
    CHECK(r[1] == doctest::Approx(70.0 / 31.0));
    CHECK(r[0] + r[1] == doctest::Approx(100.0));
  }
  SUBCASE("10/20/30: 40 left, shared 1:2:3") {
    const std::vector<ClassDemand> c = {demand(10, 100, 2, true), demand(20, 100, 2, true),
                                        demand(30, 100, 2, true)};
    const auto r = allocate_shares(600.0, c);
    CHECK(r[0] == doctest::Approx(60.0 + 240.0 / 6.0));
    CHECK(r[1] == doctest::Approx(120.0 + 240.0 * 2.0 / 6.0));
    CHECK(r[2] == doctest::Approx(180.0 + 240.0 * 3.0 / 6.0));
  }
  SUBCASE("no minimums: equal shares") {
    const std::vector<ClassDemand> c = {demand(0, 100, 4, true), demand(0, 100, 4, true),
                                        demand(0, 100, 4, true), demand(0, 100, 4, true)};
    const auto r = allocate_shares(100.0, c);
    for (double x : r) CHECK(x == doctest::Approx(25.0));
  }
}

TEST_CASE("qos: a class alone uses up to its maximum, and all of the link without one") {
  SUBCASE("max 40") {
    const auto r = allocate_shares(1e9, {demand(0, 40, 0, true)});
    CHECK(r[0] == doctest::Approx(0.4e9));
  }
  SUBCASE("min 10 max 40, another class idle") {
    const auto r = allocate_shares(1e9, {demand(10, 40, 3, true), demand(50, 100, 3, false)});
    CHECK(r[0] == doctest::Approx(0.4e9));
    CHECK(r[1] == doctest::Approx(0.5e9));  // idle: its minimum, ready to start
  }
  SUBCASE("no cap") {
    const auto r = allocate_shares(1e9, {demand(0, 100, 0, true)});
    CHECK(r[0] == doctest::Approx(1e9));
  }
}

TEST_CASE("qos: strict priority: the higher level takes what is left, up to its cap") {
  SUBCASE("uncapped high class takes everything") {
    const std::vector<ClassDemand> c = {demand(0, 100, 0, true), demand(10, 100, 7, true)};
    const auto r = allocate_shares(100.0, c);
    CHECK(r[0] == doctest::Approx(0.0));
    CHECK(r[1] == doctest::Approx(100.0));
  }
  SUBCASE("the low class keeps its minimum") {
    const std::vector<ClassDemand> c = {demand(20, 100, 0, true), demand(10, 100, 7, true)};
    const auto r = allocate_shares(100.0, c);
    CHECK(r[0] == doctest::Approx(20.0));
    CHECK(r[1] == doctest::Approx(80.0));
  }
  SUBCASE("a capped high class leaves the rest to the next level") {
    const std::vector<ClassDemand> c = {demand(0, 100, 0, true), demand(10, 50, 7, true)};
    const auto r = allocate_shares(100.0, c);
    CHECK(r[0] == doctest::Approx(50.0));
    CHECK(r[1] == doctest::Approx(50.0));
  }
  SUBCASE("three levels, each capped but the last") {
    const std::vector<ClassDemand> c = {demand(10, 30, 7, true), demand(10, 40, 3, true),
                                        demand(0, 100, 0, true)};
    const auto r = allocate_shares(100.0, c);
    CHECK(r[0] == doctest::Approx(30.0));
    CHECK(r[1] == doctest::Approx(40.0));
    CHECK(r[2] == doctest::Approx(30.0));
    CHECK(active_sum(c, r) == doctest::Approx(100.0));
  }
  SUBCASE("every class capped: the link is not filled, nobody exceeds its cap") {
    const std::vector<ClassDemand> c = {demand(0, 30, 7, true), demand(5, 20, 0, true)};
    const auto r = allocate_shares(100.0, c);
    CHECK(r[0] == doctest::Approx(30.0));
    CHECK(r[1] == doctest::Approx(20.0));
  }
}

TEST_CASE("qos: inactive classes get their minimum and are not counted against the active ones") {
  const std::vector<ClassDemand> c = {demand(40, 100, 7, false), demand(20, 100, 0, true),
                                      demand(0, 60, 5, false)};
  const auto r = allocate_shares(100.0, c);
  CHECK(r[0] == doctest::Approx(40.0));
  CHECK(r[1] == doctest::Approx(100.0));  // work-conserving: the busy class uses the whole link
  CHECK(r[2] == doctest::Approx(0.0));
  SUBCASE("nobody active") {
    const std::vector<ClassDemand> idle = {demand(40, 100, 7, false), demand(0, 100, 0, false)};
    const auto r2 = allocate_shares(100.0, idle);
    CHECK(r2[0] == doctest::Approx(40.0));
    CHECK(r2[1] == doctest::Approx(0.0));
  }
  SUBCASE("no classes") {
    CHECK(allocate_shares(100.0, {}).empty());
  }
}

TEST_CASE("qos: water-filling: a class that reaches its cap drops out and the rest is re-shared") {
  // 60 left; weights 10/10/20: A wants 15 but may take 10, B 15, C 30; the 5 A left over is
  // shared 10:20 between B and C.
  const std::vector<ClassDemand> c = {demand(10, 20, 1, true), demand(10, 100, 1, true),
                                      demand(20, 100, 1, true)};
  const auto r = allocate_shares(100.0, c);
  CHECK(r[0] == doctest::Approx(20.0));
  CHECK(r[1] == doctest::Approx(80.0 / 3.0));   // 26.67: B and C share 80 in proportion 1:2
  CHECK(r[2] == doctest::Approx(160.0 / 3.0));  // 53.33
  CHECK(active_sum(c, r) == doctest::Approx(100.0));

  SUBCASE("caps reached in two rounds") {
    // 100 left, equal weights: 25 each; A (cap 10) and B (cap 20) drop out; C and D share 70:
    // 35 each, D capped at 30, C takes the 5 more.
    const std::vector<ClassDemand> d = {demand(0, 10, 0, true), demand(0, 20, 0, true),
                                        demand(0, 100, 0, true), demand(0, 30, 0, true)};
    const auto q = allocate_shares(100.0, d);
    CHECK(q[0] == doctest::Approx(10.0));
    CHECK(q[1] == doctest::Approx(20.0));
    CHECK(q[2] == doctest::Approx(40.0));
    CHECK(q[3] == doctest::Approx(30.0));
  }
}

TEST_CASE("qos: a class that sends less than it is given keeps its minimum or its demand") {
  SUBCASE("demand below the minimum: the minimum, the rest to the others") {
    std::vector<ClassDemand> c = {demand(10, 100, 0, true), demand(0, 100, 0, true)};
    c[0].demand = 5.0;
    const auto r = allocate_shares(100.0, c);
    CHECK(r[0] == doctest::Approx(10.0));
    CHECK(r[1] == doctest::Approx(90.0));
  }
  SUBCASE("demand between minimum and maximum: the demand") {
    std::vector<ClassDemand> c = {demand(10, 100, 0, true), demand(0, 100, 0, true)};
    c[0].demand = 30.0;
    const auto r = allocate_shares(100.0, c);
    CHECK(r[0] == doctest::Approx(30.0));
    CHECK(r[1] == doctest::Approx(70.0));
  }
  SUBCASE("demand above the maximum: the maximum") {
    std::vector<ClassDemand> c = {demand(10, 40, 7, true), demand(0, 100, 0, true)};
    c[0].demand = 80.0;
    const auto r = allocate_shares(100.0, c);
    CHECK(r[0] == doctest::Approx(40.0));
    CHECK(r[1] == doctest::Approx(60.0));
  }
  SUBCASE("a light high-priority class leaves the rest to the lower level") {
    std::vector<ClassDemand> c = {demand(0, 100, 7, true), demand(0, 100, 0, true)};
    c[0].demand = 12.5;
    const auto r = allocate_shares(100.0, c);
    CHECK(r[0] == doctest::Approx(12.5));
    CHECK(r[1] == doctest::Approx(87.5));
  }
  SUBCASE("the default demand is unlimited") {
    const auto r = allocate_shares(100.0, {demand(0, 100, 0, true)});
    CHECK(r[0] == doctest::Approx(100.0));
  }
  SUBCASE("an idle class with a demand still gets its minimum") {
    std::vector<ClassDemand> c = {demand(20, 100, 0, false), demand(0, 100, 0, true)};
    c[0].demand = 1.0;
    const auto r = allocate_shares(100.0, c);
    CHECK(r[0] == doctest::Approx(20.0));
    CHECK(r[1] == doctest::Approx(100.0));
  }
}

TEST_CASE("qos: random classes: minimums, caps, demands, priority, fairness, work conserved") {
  std::mt19937 rng(20240611);
  for (int round = 0; round < 2000; ++round) {
    const int n = std::uniform_int_distribution<int>(1, 6)(rng);
    std::vector<ClassDemand> c;
    int mins_left = 100;  // the minimums of a host add up to 100% at most
    for (int i = 0; i < n; ++i) {
      ClassDemand d;
      d.min_rate = std::uniform_int_distribution<int>(0, std::min(mins_left, 40))(rng);
      if (rng() % 3 == 0) d.min_rate = 0;
      mins_left -= d.min_rate;
      d.max_rate = std::uniform_int_distribution<int>(std::max(d.min_rate, 1), 100)(rng);
      if (rng() % 2 == 0) d.max_rate = 100;
      d.priority = static_cast<int>(rng() % 3) * 3;  // 0, 3, 6: levels shared by several
      d.active = rng() % 4 != 0;
      if (rng() % 4 == 0) d.demand = std::uniform_real_distribution<double>(0, 0.5)(rng) * 1e9;
      c.push_back(d);
    }
    const double capacity = 1e9;
    // What a class may get at most: its maximum, or its demand, but never below its minimum.
    auto limit = [&](const ClassDemand& d) {
      return std::max(capacity * d.min_rate / 100.0,
                      std::min(capacity * d.max_rate / 100.0, d.demand));
    };
    const auto r = allocate_shares(capacity, c);
    REQUIRE(r.size() == c.size());
    const double eps = capacity * 1e-7;
    double cap_sum = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      CAPTURE(round);
      CAPTURE(i);
      const double min = capacity * c[i].min_rate / 100.0;
      const double cap = limit(c[i]);
      if (!c[i].active) {
        CHECK(r[i] == doctest::Approx(min));
        continue;
      }
      cap_sum += cap;
      CHECK(r[i] >= min - eps);
      CHECK(r[i] <= cap + eps);
    }
    // Work conservation: the link is full whenever the active caps allow it.
    CAPTURE(round);
    CHECK(active_sum(c, r) == doctest::Approx(std::min(capacity, cap_sum)).epsilon(1e-7));
    for (size_t i = 0; i < c.size(); ++i) {
      if (!c[i].active) continue;
      const double min_i = capacity * c[i].min_rate / 100.0;
      const double cap_i = limit(c[i]);
      const double w_i = std::max(c[i].min_rate, 1);
      for (size_t j = 0; j < c.size(); ++j) {
        if (j == i || !c[j].active) continue;
        const double min_j = capacity * c[j].min_rate / 100.0;
        const double cap_j = limit(c[j]);
        const double w_j = std::max(c[j].min_rate, 1);
        // Strict priority: a lower class gets beyond its minimum only once the higher is capped.
        if (c[i].priority > c[j].priority && r[j] > min_j + eps) CHECK(r[i] >= cap_i - eps);
        // Within a level: equal extra per unit of weight, except for those capped below it.
        if (c[i].priority == c[j].priority && r[j] < cap_j - eps) {
          const double extra_i = (r[i] - min_i) / w_i;
          const double extra_j = (r[j] - min_j) / w_j;
          if (r[i] < cap_i - eps)
            CHECK(extra_i == doctest::Approx(extra_j).epsilon(1e-6));
          else
            CHECK(extra_i <= extra_j + eps);
        }
      }
    }
  }
}

// =============================================================================================
// Token bucket (fake clock)

TEST_CASE("qos: a token bucket starts full: exactly burst bytes may go at once") {
  const auto t0 = at_ms(0);
  TokenBucket b(1000.0, 500.0, t0);
  CHECK(b.rate() == 1000.0);
  CHECK(b.ready(t0));
  CHECK(b.ready_at(t0) == t0);
  b.take(499, t0);
  CHECK(b.ready(t0));  // 1 byte left
  b.take(1, t0);
  CHECK_FALSE(b.ready(t0));  // 0 left: empty, not in credit
  // One byte more is needed: 1 ms at 1000 B/s.
  CHECK(seconds(b.ready_at(t0) - t0) == doctest::Approx(0.001).epsilon(1e-6));
}

TEST_CASE("qos: a frame starts while the bucket has any tokens and takes its whole size") {
  const auto t0 = at_ms(0);
  TokenBucket b(1000.0, 500.0, t0);
  b.take(400, t0);  // 100 left
  REQUIRE(b.ready(t0));
  b.take(800, t0);  // -700: a debt, the frame is not split
  CHECK_FALSE(b.ready(t0));
  // Out of debt after 700 bytes at 1000 B/s, ready once in credit (1 byte: +1 ms).
  const auto when = b.ready_at(t0);
  CHECK(seconds(when - t0) >= 0.700);
  CHECK(seconds(when - t0) <= 0.701 + 1e-9);
  CHECK(seconds(when - t0) == doctest::Approx(0.701).epsilon(1e-6));
  CHECK_FALSE(b.ready(at_ms(699.9)));  // still in debt
  CHECK(b.ready(when));
  CHECK(b.ready_at(when) == when);
}

TEST_CASE("qos: ready_at is when the debt is paid at the rate, for any debt") {
  const auto t0 = at_ms(0);
  for (double rate : {1e3, 1e6, 1e8}) {
    for (double debt : {1.0, 1000.0, 65536.0, 4.0 * 1024 * 1024}) {
      CAPTURE(rate);
      CAPTURE(debt);
      TokenBucket b(rate, 1000.0, t0);
      b.take(static_cast<size_t>(1000.0 + debt), t0);
      const auto when = b.ready_at(t0);
      // (debt + 1 byte) / rate, to the clock's nanosecond.
      CHECK(std::abs(seconds(when - t0) - (debt + 1.0) / rate) <= 1.01e-9);
      // Not ready half a byte's time before the debt is paid; ready at ready_at().
      CHECK_FALSE(b.ready(when - std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(1.5 / rate))));
      CHECK(b.ready(when));
      CHECK(b.ready_at(when) == when);
    }
  }
}

// Above 1 GB/s a byte takes less than the clock's nanosecond: ready_at() must round up.
TEST_CASE("qos: ready_at is never before ready() holds, at link speeds above 1 GB/s too") {
  const auto t0 = at_ms(0);
  for (double rate : {1.25e9, 12.5e9}) {
    for (double debt : {1.0, 1000.0, 65536.0, 4.0 * 1024 * 1024}) {
      CAPTURE(rate);
      CAPTURE(debt);
      TokenBucket b(rate, 1000.0, t0);
      b.take(static_cast<size_t>(1000.0 + debt), t0);
      const auto when = b.ready_at(t0);
      CHECK(b.ready(when));
    }
  }
}

TEST_CASE("qos: an idle bucket saves up to its burst, no more") {
  const auto t0 = at_ms(0);
  TokenBucket b(1000.0, 500.0, t0);
  b.take(500, t0);
  REQUIRE_FALSE(b.ready(t0));
  const auto t1 = at_ms(10000);  // 10 s idle: 10000 bytes earned, 500 kept
  CHECK(b.ready(t1));
  b.take(500, t1);
  CHECK_FALSE(b.ready(t1));
  b.take(1, t1);  // -1
  CHECK(seconds(b.ready_at(t1) - t1) == doctest::Approx(0.002).epsilon(1e-6));
  SUBCASE("time going backwards earns nothing") {
    CHECK_FALSE(b.ready(at_ms(5000)));
    CHECK(seconds(b.ready_at(t1) - t1) == doctest::Approx(0.002).epsilon(1e-6));
  }
}

TEST_CASE("qos: set_rate keeps what was earned at the old rate and pays the rest at the new") {
  const auto t0 = at_ms(0);
  TokenBucket b(1000.0, 10000.0, t0);
  b.take(10000, t0);  // empty
  const auto t1 = at_ms(1000);
  b.set_rate(2000.0, t1);  // 1000 bytes earned at the old rate
  CHECK(b.rate() == 2000.0);
  REQUIRE(b.ready(t1));
  b.take(1000, t1);
  CHECK_FALSE(b.ready(t1));  // exactly 1000 were saved, not 2000
  b.take(1999, t1);          // -1999: 1 s at 2000 B/s to be in credit again
  CHECK(seconds(b.ready_at(t1) - t1) == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(b.ready(at_ms(2000.5)));

  SUBCASE("saved tokens stay capped by the burst") {
    TokenBucket c(1000.0, 500.0, t0);
    c.set_rate(1e6, at_ms(60000));
    c.take(500, at_ms(60000));
    CHECK_FALSE(c.ready(at_ms(60000)));
  }
  SUBCASE("a new rate applies only from the change on") {
    TokenBucket c(1000.0, 1e9, t0);
    c.take(1000000000, t0);       // empty
    c.set_rate(0.0, at_ms(500));  // 500 bytes earned until now
    CHECK(c.ready(at_ms(100000)));
    c.take(500, at_ms(100000));
    CHECK_FALSE(c.ready(at_ms(200000)));  // nothing earned at rate 0
  }
}

TEST_CASE("qos: a bucket at rate 0 in debt is ready only far away") {
  const auto t0 = at_ms(0);
  TokenBucket b(0.0, 100.0, t0);
  CHECK(b.ready(t0));  // what was saved may still be spent
  CHECK(b.ready_at(t0) == t0);
  b.take(200, t0);
  CHECK_FALSE(b.ready(t0));
  CHECK(b.ready_at(t0) - t0 >= std::chrono::minutes(59));
  CHECK_FALSE(b.ready(at_ms(600000.0)));  // 10 min later, still in debt
}

// A tiny positive rate makes (1 - tokens) / rate too large for the nanosecond clock: it must
// not overflow into the past (the gate would spin).
TEST_CASE("qos: a bucket at a tiny positive rate is ready in the future, never in the past") {
  const auto t0 = at_ms(0);
  TokenBucket b(1e-9, 100.0, t0);
  b.take(1 << 20, t0);
  const auto when = b.ready_at(t0);
  CHECK(when > t0);
  CHECK(when - t0 >= std::chrono::minutes(59));
}

TEST_CASE("qos: over many frames a token bucket sends at its rate exactly") {
  constexpr double kRate = 1e8;     // 100 MB/s
  constexpr size_t kFrame = 65536;  // 64 KiB
  SUBCASE("a sender that starts every frame as soon as ready_at allows") {
    const auto t0 = at_ms(0);
    TokenBucket b(kRate, 1500.0, t0);
    auto t = t0;
    for (int i = 0; i < 1000; ++i) {
      t = b.ready_at(t);
      REQUIRE(b.ready(t));
      b.take(kFrame, t);
    }
    const double busy = seconds(b.ready_at(t) - t0);  // until the last frame is paid
    const double ideal = 64000.0 * 1024 / kRate;      // 0.65536 s
    CHECK(std::abs(busy - ideal) <= kFrame / kRate);  // within one frame
    // Exactly: the burst came free, each frame waited for its 1-byte credit.
    CHECK(busy == doctest::Approx((1000.0 * kFrame - 1500.0 + 1000.0) / kRate).epsilon(1e-5));
  }
  SUBCASE("a sender that looks only every millisecond loses nothing (burst covers the wait)") {
    const auto t0 = at_ms(0);
    TokenBucket b(kRate, 256.0 * 1024, t0);
    double sent = 0;
    for (int ms = 0; ms <= 1000; ++ms) {
      const auto t = at_ms(ms);
      while (b.ready(t)) {
        b.take(kFrame, t);
        sent += kFrame;
      }
    }
    // sent = burst + rate * 1 s - tokens, tokens in (-frame, 0].
    CHECK(sent - 256.0 * 1024 >= kRate * 1.0);
    CHECK(sent - 256.0 * 1024 < kRate * 1.0 + kFrame);
  }
}

// =============================================================================================
// Send gate and PacedLink (real engine, fake link)

TEST_CASE("qos: the gate sends a class's frames at its rate") {
  Rig rig;
  constexpr double kRate = 20e6;  // 20 MB/s
  constexpr uint64_t kFrame = 64 * 1024;
  constexpr int kFrames = 40;
  std::vector<FakeRequest*> reqs;
  for (int i = 0; i < kFrames; ++i) reqs.push_back(rig.request(i, kFrame));
  rig.run([&] {
    rig.gate->add_class(7, 2, kRate, nullptr, -1);
    for (FakeRequest* r : reqs) rig.gate->post(7, &rig.link, r);
  });
  REQUIRE(eventually([&] { return rig.link.count() == kFrames; }, 3000ms));
  const auto sent = rig.link.sent();
  for (int i = 0; i < kFrames; ++i) {
    CHECK(sent[static_cast<size_t>(i)].tag == i);  // FIFO within a class
    CHECK(reqs[static_cast<size_t>(i)]->sent.load() == 1);
  }
  // Frame k may start once k frames, less the burst, were paid for: the last at
  // ((N-1)*S - burst) / R after the first (0.115 s).
  const double elapsed = seconds(sent.back().when - sent.front().when);
  const double expected = ((kFrames - 1) * static_cast<double>(kFrame) - kGateBurst) / kRate;
  CAPTURE(elapsed);
  CAPTURE(expected);
  CHECK(elapsed >= expected * 0.95);
  CHECK(elapsed <= expected * 1.30);
  // Steady state, past the burst: one frame per S/R.
  const double steady = seconds(sent.back().when - sent[8].when);
  CAPTURE(steady);
  CHECK(steady >= (kFrames - 1 - 8) * kFrame / kRate * 0.90);
  CHECK(steady <= (kFrames - 1 - 8) * kFrame / kRate * 1.30);
}

TEST_CASE("qos: the gate tells the host board what a class sent and how long it is busy") {
  TestBoard tb;
  REQUIRE(tb.board.get() != nullptr);
  Rig rig;
  const uint64_t size = static_cast<uint64_t>(kGateBurst) + 100000;
  FakeRequest* r = rig.request(1, size);
  int64_t before = 0, after = 0;
  rig.run([&] {
    before = ns(Clock::now());
    rig.gate->add_class(5, 0, 1e6, tb.board.get(), tb.slot);  // 1 MB/s: 100000 B of debt: 0.1 s
    rig.gate->post(5, &rig.link, r);
    after = ns(Clock::now());
  });
  CHECK(rig.link.count() == 1);  // the bucket was full: sent at once
  const int64_t kActive = std::chrono::nanoseconds(SendGate::kActiveFor).count();
  // Busy while it pays off its debt, and kActiveFor after.
  const auto busy_from = before + 100'000'000 + kActive;  // the earliest it may end
  const auto busy_to = after + 100'002'000 + kActive;     // the latest
  auto entry = tb.entry(after);
  REQUIRE(entry.slot == tb.slot);
  CHECK(entry.bytes_sent == size);
  CHECK(entry.active);
  // In debt but with nothing waiting: not backlogged (it sent all it had).
  CHECK_FALSE(entry.backlogged);
  entry = tb.entry(busy_from - 1'000'000);
  CHECK(entry.active);
  entry = tb.entry(busy_to + 1'000'000);
  CHECK_FALSE(entry.active);
  CHECK_FALSE(entry.backlogged);
}

// A class whose frames go as they come is limited by its own traffic, not by its rate: the
// controller may hold it to what it sends.
TEST_CASE("qos: a class whose frames go at once is not reported backlogged") {
  TestBoard tb;
  REQUIRE(tb.board.get() != nullptr);
  Rig rig;
  FakeRequest* r = rig.request(1, 1000);
  int64_t after = 0;
  rig.run([&] {
    rig.gate->add_class(5, 0, 1e9, tb.board.get(), tb.slot);
    rig.gate->post(5, &rig.link, r);
    after = ns(Clock::now());
  });
  REQUIRE(rig.link.count() == 1);
  const auto entry = tb.entry(after);
  CHECK(entry.bytes_sent == 1000);
  CHECK(entry.active);
  CHECK_FALSE(entry.backlogged);
}

TEST_CASE("qos: the gate has each link of a class paced a little above the class's rate") {
  Rig rig;
  FakeLink other;
  FakeRequest* r1 = rig.request(1, 1000);
  FakeRequest* r2 = rig.request(2, 1000);
  FakeRequest* r3 = rig.request(3, 1000);
  rig.run([&] {
    rig.gate->add_class(6, 0, 1e8, nullptr, -1);
    rig.gate->post(6, &rig.link, r1);
    rig.gate->post(6, &rig.link, r2);  // the same link: told once
    rig.gate->post(6, &other, r3);
  });
  auto pacing = rig.link.pacing();
  REQUIRE(pacing.size() == 1);
  CHECK(pacing[0] >= 1e8);
  CHECK(pacing[0] <= 1.25e8);
  REQUIRE(other.pacing().size() == 1);
  CHECK(other.pacing()[0] == doctest::Approx(pacing[0]));
  rig.run([&] { rig.gate->set_class(6, 0, 2e8); });  // every link of the class, again
  pacing = rig.link.pacing();
  REQUIRE(pacing.size() == 2);
  CHECK(pacing[1] >= 2e8);
  CHECK(pacing[1] <= 2.5e8);
  REQUIRE(other.pacing().size() == 2);
  rig.run([&] { rig.gate->set_class(6, 0, 0.0); });  // rate 0: no kernel limit (0)
  CHECK(rig.link.pacing().back() == 0.0);
}

TEST_CASE("qos: frames queued together go higher priority first, then in the order queued") {
  SUBCASE("different priorities") {
    Rig rig;
    // Class 1 posts first but class 2 has the higher priority.
    CHECK(queued_order(rig, 0, 5) == std::vector<int>{0, 21, 22, 23, 11, 12, 13});
  }
  SUBCASE("one priority: first queued first, across classes") {
    Rig rig;
    // Class 2 posts first: it goes first although class 1 comes first by id.
    CHECK(queued_order(rig, 3, 3, /*first=*/2) == std::vector<int>{0, 21, 11, 22, 12, 23, 13});
  }
}

TEST_CASE("qos: a Scheduler decides the order among the classes that may send") {
  SUBCASE("one that leaves the order as it is: by class id, priorities ignored") {
    auto keep = std::make_shared<KeepOrder>();
    SchedulerGuard guard(keep);
    Rig rig;
    CHECK(queued_order(rig, 0, 5) == std::vector<int>{0, 11, 12, 13, 21, 22, 23});
    REQUIRE(keep->seen.size() == 3);  // asked only while both classes wait
    const std::vector<QosTask>& first = keep->seen.front();
    REQUIRE(first.size() == 2);
    CHECK(first[0].comm == 1);
    CHECK(first[0].priority == 0);
    CHECK(first[0].bytes == 1000);
    CHECK(first[1].comm == 2);
    CHECK(first[1].priority == 5);
    CHECK(first[1].bytes == 2000);
    CHECK(first[0].queued < first[1].queued);  // 11 was queued before 21
    CHECK(first[0].queued <= Clock::now());
  }
  SUBCASE("one that reverses it: the lower priority first") {
    auto reverse = std::make_shared<Reverse>();
    SchedulerGuard guard(reverse);
    Rig rig;
    CHECK(queued_order(rig, 5, 0) == std::vector<int>{0, 21, 22, 23, 11, 12, 13});
    CHECK(reverse->calls.load() == 3);
  }
  SUBCASE("nullptr restores the default") {
    hcomm::set_scheduler(std::make_shared<Reverse>());
    hcomm::set_scheduler(nullptr);
    CHECK(hcomm::qos::current_scheduler().get() == nullptr);
    Rig rig;
    CHECK(queued_order(rig, 5, 0) == std::vector<int>{0, 11, 12, 13, 21, 22, 23});
  }
}

TEST_CASE("qos: remove_class drops the class's queued frames, which are never sent") {
  Rig rig;
  FakeRequest* big = rig.request(1, static_cast<uint64_t>(kGateBurst) + 50000);  // 50 s of debt
  FakeRequest* q1 = rig.request(2, 1000);
  FakeRequest* q2 = rig.request(3, 1000);
  rig.run([&] {
    rig.gate->add_class(9, 0, 1000.0, nullptr, -1);  // 1000 B/s
    rig.gate->post(9, &rig.link, big);
    rig.gate->post(9, &rig.link, q1);
    rig.gate->post(9, &rig.link, q2);
  });
  CHECK(rig.link.tags() == std::vector<int>{1});  // the others wait for the debt
  rig.run([&] { rig.gate->remove_class(9); });
  // A class with the same id again: a fresh bucket, no old frames.
  FakeRequest* fresh = rig.request(4, 1000);
  rig.run([&] {
    rig.gate->add_class(9, 0, 1e9, nullptr, -1);
    rig.gate->post(9, &rig.link, fresh);
  });
  std::this_thread::sleep_for(30ms);
  CHECK(rig.link.tags() == std::vector<int>{1, 4});
  CHECK(q1->sent.load() == 0);
  CHECK(q2->sent.load() == 0);
  CHECK(fresh->sent.load() == 1);
}

TEST_CASE("qos: set_class to a higher rate lets a waiting frame go at once") {
  Rig rig;
  FakeRequest* big = rig.request(1, static_cast<uint64_t>(kGateBurst) + 50000);
  FakeRequest* next = rig.request(2, 1000);
  rig.run([&] {
    rig.gate->add_class(4, 0, 1000.0, nullptr, -1);  // the next frame would wait 50 s
    rig.gate->post(4, &rig.link, big);
    rig.gate->post(4, &rig.link, next);
  });
  std::this_thread::sleep_for(20ms);
  REQUIRE(rig.link.tags() == std::vector<int>{1});
  const auto changed = Clock::now();
  rig.run([&] { rig.gate->set_class(4, 6, 1e9); });  // 50000 bytes: 50 us at 1 GB/s
  REQUIRE(eventually([&] { return rig.link.count() == 2; }, 1000ms));
  CHECK(seconds(rig.link.sent().back().when - changed) < 0.2);
  CHECK(next->sent.load() == 1);
}

TEST_CASE("qos: a frame of a class the gate does not know goes straight to its link") {
  Rig rig;
  FakeRequest* r = rig.request(1, 1 << 20);
  rig.run([&] { rig.gate->post(42, &rig.link, r); });
  CHECK(rig.link.tags() == std::vector<int>{1});
  CHECK(r->sent.load() == 1);
}

TEST_CASE("qos: PacedLink paces data frames through the gate and passes everything else by") {
  Rig rig;
  PacedLink paced(rig.link, *rig.gate, 8);
  FakeRequest* big = rig.request(1, static_cast<uint64_t>(kGateBurst) + 50000);
  FakeRequest* data = rig.request(2, 1000);
  FakeRequest* abort = rig.request(3, 10, FrameKind::abort);
  FakeRequest* channel = rig.request(4, 10, FrameKind::channel);
  FakeRequest* close = rig.request(5, 0, FrameKind::close);
  rig.run([&] {
    rig.gate->add_class(8, 0, 1000.0, nullptr, -1);  // in debt for 50 s after `big`
    paced.post_send(big);
    paced.post_send(data);
    paced.post_send(abort);
    paced.post_send(channel);
    paced.post_send(close);
  });
  std::this_thread::sleep_for(20ms);
  // The data frame waits for its class; the others went by at once, in order.
  CHECK(rig.link.tags() == std::vector<int>{1, 3, 4, 5});
  CHECK(data->sent.load() == 0);
  CHECK(abort->sent.load() == 1);

  SUBCASE("the rest of the link is the inner one") {
    CHECK(paced.peer() == 3);
    CHECK(paced.is_up());
    CHECK(&paced.describe() == &rig.link.describe());
    CHECK(std::string(paced.caps().medium) == "fake");
    CHECK(paced.error().ok());
    rig.run([&] {
      FrameHeader h;
      h.comm_id = 77;
      paced.send_channel(h, "hello");
      paced.set_traffic_class(0x48);
      paced.close();
    });
    const auto ch = rig.link.channel();
    REQUIRE(ch.size() == 1);
    CHECK(ch[0].first.comm_id == 77);
    CHECK(ch[0].second == "hello");
    CHECK(rig.link.tos_.load() == 0x48);
    CHECK(rig.link.closed_.load());
  }
}
