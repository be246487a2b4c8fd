// The progress engine's two drivers: its own thread, and a caller waiting in drive_until().
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "transport/progress_engine.hpp"

using hcomm::transport::ProgressEngine;
using namespace std::chrono_literals;

namespace {

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds within) {
  const auto end = std::chrono::steady_clock::now() + within;
  while (!cond()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(100us);
  }
  return true;
}

}  // namespace

TEST_CASE("a task posted with nobody driving runs on the engine thread, promptly") {
  ProgressEngine engine;
  std::atomic<bool> ran{false};
  std::thread::id where;
  engine.post([&] {
    where = std::this_thread::get_id();
    ran = true;
  });
  REQUIRE(eventually([&] { return ran.load(); }, 1000ms));
  CHECK((where != std::this_thread::get_id()));
}

TEST_CASE("a caller that drives runs the tasks itself, and the engine thread stays out") {
  ProgressEngine engine;
  for (int round = 0; round < 200; ++round) {  // a loop of blocking operations
    std::atomic<bool> done{false};
    std::thread::id where;
    engine.post(
        [&] {
          where = std::this_thread::get_id();
          done = true;
        },
        ProgressEngine::Waker::caller);
    REQUIRE(engine.drive_until([&] { return done.load(); }, std::chrono::steady_clock::now() + 1s));
    CHECK((where == std::this_thread::get_id()));
  }
}

TEST_CASE("work left running when a caller stops driving is finished by the engine thread") {
  ProgressEngine engine;
  std::atomic<bool> done{false};
  std::thread::id finished_on;
  engine.post(
      [&] {
        engine.active_operations().fetch_add(1);
        // Completes 5 ms later, long after the caller below gave up.
        engine.add_timer(ProgressEngine::Clock::now() + 5ms, [&] {
          finished_on = std::this_thread::get_id();
          engine.active_operations().fetch_sub(1);
          done = true;
        });
      },
      ProgressEngine::Waker::caller);
  CHECK_FALSE(
      engine.drive_until([&] { return done.load(); }, std::chrono::steady_clock::now() + 500us));
  // The caller handed over; the engine thread is woken at once, not after its park timeout.
  REQUIRE(eventually([&] { return done.load(); }, 1000ms));
  CHECK((finished_on != std::this_thread::get_id()));
}

TEST_CASE("two callers: one drives, the other's work completes through it") {
  ProgressEngine engine;
  std::atomic<int> finished{0};
  auto waiter = [&] {
    for (int i = 0; i < 500; ++i) {
      std::atomic<bool> done{false};
      engine.post([&] { done = true; }, ProgressEngine::Waker::caller);
      while (!engine.drive_until([&] { return done.load(); },
                                 std::chrono::steady_clock::now() + 1ms)) {
      }
    }
    ++finished;
  };
  std::thread a(waiter), b(waiter);
  a.join();
  b.join();
  CHECK(finished == 2);
}
