// Shared memory under stress, on 2 ranks of one host (regressions found in review):
//  1. eight async slot-board operations in flight, every result checked exactly (a rank once
//     overwrote its own slot before it had read it back);
//  2. a completion callback that starts the next operation (once deadlocked on the submit lock);
//  3. a peer that destroys its communicator: the survivor's small (slot board), large (staged)
//     and ring (forced hd) operations fail with HCOMM_ERR_PEER_LOST at once, not at their
//     deadline, and so does a staged allreduce the peer leaves in the middle;
//  4. destroying a communicator while a large operation is stuck (once a use-after-free): it
//     fails with HCOMM_ERR_ABORTED and the process carries on.
// The last three cases build their own communicators; every wait has a deadline. Each case first
// asserts that it takes the path it means to test (Communicator::algorithm_for: "slot" for the
// slot board, "staged" for the staging rings, "hd" for the forced pair-link algorithm), and the
// first communicator that every peer is on shared memory: a case on another path would pass
// without testing anything it is about.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hcomm/hcomm.hpp"
#include "reference/reduction.hpp"

namespace {

using namespace std::chrono_literals;
using hcomm::Communicator;
using hcomm::DataType;
using hcomm::ReduceOp;
using hcomm::Status;
using hcomm::tools::reference::matches;

int failures = 0;

/// The float32 sum over `size` ranks of input(rank) (hcomm_reference): what an allreduce of
/// them must give.
template <class Input>
hcomm::tools::reference::Expectation summed(int size, const Input& input) {
  return hcomm::tools::reference::reduction(DataType::float32, ReduceOp::sum, size, input);
}

void check(bool ok, const char* what, const std::string& detail = "") {
  if (ok) return;
  ++failures;
  std::printf("FAIL: %s %s\n", what, detail.c_str());
}

/// The path an allreduce of `bytes` bytes takes on `c` must be `want`.
void expect_route(const Communicator& c, size_t bytes, const std::string& want, const char* what) {
  const std::string got = c.algorithm_for("allreduce", bytes);
  check(got == want, what,
        "allreduce of " + std::to_string(bytes) + " bytes runs '" + got + "', not '" + want + "'");
}

/// Every peer of `c` is reached through shared memory.
void expect_shm(const Communicator& c) {
  std::string wrong;
  for (const hcomm::RankInfo& r : c.ranks())
    if (r.rank != c.rank() && r.transport != "shm")
      wrong += " rank " + std::to_string(r.rank) + ": " + r.transport;
  check(wrong.empty(), "every peer on shm (run the 2 ranks on one host, HCOMM_TRANSPORT unset)",
        wrong);
}

/// `algo`: forced algorithms (Config::algo), "" for the automatic choice.
std::unique_ptr<Communicator> make(const std::string& algo = "") {
  auto cfg = hcomm::Config::from_env();
  if (cfg.ok()) cfg.value().algo = algo;
  auto c = cfg.ok() ? Communicator::create(cfg.value())
                    : hcomm::Expected<std::unique_ptr<Communicator>>(cfg.status());
  if (!c.ok()) {
    std::printf("FAIL: create: %s\n", c.status().to_string().c_str());
    std::exit(1);
  }
  return std::move(c.value());
}

void deep_async(Communicator& c) {
  constexpr int kInFlight = 8, kRounds = 200, kCount = 4;
  expect_route(c, kCount * sizeof(float), "slot", "deep async: route");
  std::vector<std::vector<float>> in(kInFlight, std::vector<float>(kCount));
  std::vector<std::vector<float>> out(kInFlight, std::vector<float>(kCount));
  int wrong = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<hcomm::Work> works;
    for (int k = 0; k < kInFlight; ++k) {
      for (int i = 0; i < kCount; ++i)
        in[k][i] = static_cast<float>(1000 * round + 10 * k + i + c.rank());
      works.push_back(
          c.allreduce_async(in[k].data(), out[k].data(), kCount, DataType::float32, ReduceOp::sum));
    }
    for (int k = 0; k < kInFlight; ++k) {
      Status st = works[k].wait(30s);
      check(st.ok(), "deep async wait", st.to_string());
      for (int i = 0; i < kCount; ++i)
        wrong += !matches(summed(c.size(), [&](int r) { return 1000.0 * round + 10 * k + i + r; }),
                          out[k][i]);
    }
  }
  check(wrong == 0, "deep async results", std::to_string(wrong) + " wrong");
}

void callback_submits(Communicator& c) {
  float a = 1, b = 0, x = 2, y = 0;
  expect_route(c, sizeof(float), "slot", "callback: route");
  std::promise<Status> second;
  auto done = second.get_future();
  auto first = c.allreduce_async(&a, &b, 1, DataType::float32, ReduceOp::sum);
  first.on_complete([&](const Status&) {
    c.allreduce_async(&x, &y, 1, DataType::float32, ReduceOp::sum)
        .on_complete([&](const Status& s) { second.set_value(s); });
  });
  check(first.wait(30s).ok(), "callback: first operation");
  check(done.wait_for(30s) == std::future_status::ready, "callback: second operation never ended");
  check(matches(summed(c.size(), [&](int) { return double{x}; }), y), "callback: second result",
        std::to_string(y));
}

void peer_destroys(std::unique_ptr<Communicator> c, size_t count, const char* route) {
  expect_route(*c, count * sizeof(float), route, "peer destroys: route");
  std::vector<float> a(count, 1), b(count);
  check(c->barrier().ok(), "peer destroys: barrier");
  if (c->rank() == 0) {
    c.reset();
    std::this_thread::sleep_for(300ms);  // rank 1 asks while this process still lives
    return;
  }
  std::this_thread::sleep_for(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  Status st =
      c->allreduce_async(a.data(), b.data(), count, DataType::float32, ReduceOp::sum).wait(20s);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  check(st.code() == hcomm::HCOMM_ERR_PEER_LOST, "peer destroys: status", st.to_string());
  check(ms < 2000, "peer destroys: too slow", std::to_string(ms) + " ms");
}

// Rank 0 leaves a 64 MiB staged allreduce 2 ms into its exchange (its wait gives up and it
// destroys its communicator): rank 1, in the middle of the same exchange, fails at once.
void peer_leaves_midway(std::unique_ptr<Communicator> c) {
  constexpr size_t kCount = 16 << 20;
  expect_route(*c, kCount * sizeof(float), "staged", "peer leaves midway: route");
  std::vector<float> a(kCount, 1), b(kCount);
  check(c->barrier().ok(), "peer leaves midway: barrier");
  auto work = c->allreduce_async(a.data(), b.data(), kCount, DataType::float32, ReduceOp::sum);
  if (c->rank() == 0) {
    Status st = work.wait(2ms);
    check(st.code() == hcomm::HCOMM_ERR_TIMEOUT, "peer leaves midway: rank 0 finished early",
          st.to_string());
    c.reset();
    check(work.wait(1s).code() == hcomm::HCOMM_ERR_ABORTED, "peer leaves midway: rank 0 status");
    std::this_thread::sleep_for(300ms);  // rank 1 finds a closed communicator, not a dead process
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  Status st = work.wait(20s);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  check(st.code() == hcomm::HCOMM_ERR_PEER_LOST, "peer leaves midway: status", st.to_string());
  check(ms < 2000, "peer leaves midway: too slow", std::to_string(ms) + " ms");
}

void destroy_in_flight(std::unique_ptr<Communicator> c) {
  constexpr size_t kCount = 8 << 20;  // 32 MiB: far more than the rings hold
  expect_route(*c, kCount * sizeof(float), "staged", "destroy in flight: route");
  std::vector<float> a(kCount, 1), b(kCount);
  check(c->barrier().ok(), "destroy in flight: barrier");
  if (c->rank() == 1) {
    std::this_thread::sleep_for(500ms);  // never calls: rank 0's operation stays stuck
    return;
  }
  auto work = c->allreduce_async(a.data(), b.data(), kCount, DataType::float32, ReduceOp::sum);
  std::this_thread::sleep_for(100ms);
  c.reset();
  Status st = work.wait(10s);
  check(st.code() == hcomm::HCOMM_ERR_ABORTED, "destroy in flight: status", st.to_string());
}

}  // namespace

int main() {
  // Kept to the end: the rendezvous lives in rank 0's runtime, which must outlive the
  // communicators the cases create and destroy.
  auto anchor = make();
  expect_shm(*anchor);
  deep_async(*anchor);
  callback_submits(*anchor);
  peer_destroys(make(), 16, "slot");                   // slot board
  peer_destroys(make(), 1 << 20, "staged");            // staging rings
  peer_destroys(make("allreduce=hd"), 1 << 20, "hd");  // pair links
  peer_leaves_midway(make());
  destroy_in_flight(make());
  check(anchor->barrier().ok(), "final barrier");
  std::printf("shm_robustness: %s\n", failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}
