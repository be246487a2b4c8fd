// hcomm::Work over core::Completion: the wait's deadlines, its timeout's status, callbacks.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "core/completion.hpp"
#include "hcomm/work.hpp"

using hcomm::HCOMM_ERR_ABORTED;
using hcomm::HCOMM_ERR_INVALID_ARG;
using hcomm::HCOMM_ERR_TIMEOUT;
using hcomm::Status;
using hcomm::Work;
using hcomm::core::Completion;
using namespace std::chrono_literals;

TEST_CASE("Work::wait: forever (milliseconds::max()) waits for the completion, no overflow") {
  auto c = std::make_shared<Completion>();
  Work w(c);
  std::thread completer([c] {
    std::this_thread::sleep_for(20ms);
    c->complete({HCOMM_ERR_ABORTED, "done late"});
  });
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = w.wait(std::chrono::milliseconds::max());
  completer.join();
  CHECK(st.code() == HCOMM_ERR_ABORTED);
  CHECK(std::chrono::steady_clock::now() - t0 >= 15ms);
  CHECK(w.test());
}

TEST_CASE(
    "Work::wait: a short timeout on a pending operation is HCOMM_ERR_TIMEOUT, then it completes") {
  auto c = std::make_shared<Completion>();
  Work w(c);
  const Status late = w.wait(5ms);
  CHECK(late.code() == HCOMM_ERR_TIMEOUT);
  CHECK(late.message().find("5 ms") != std::string::npos);
  CHECK_FALSE(w.test());
  bool called = false;
  w.on_complete([&](const Status& s) { called = s.ok(); });
  c->complete({});
  CHECK(called);
  CHECK(w.wait(0ms).ok());
}

TEST_CASE("Work: an empty handle is an error, not a crash") {
  Work w;
  CHECK(w.wait(1ms).code() == HCOMM_ERR_INVALID_ARG);
  CHECK(w.status().code() == HCOMM_ERR_INVALID_ARG);
  CHECK_FALSE(w.test());
}
