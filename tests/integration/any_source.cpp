// Receives from any source (Communicator::kAnySource) under hcomm-run -n N (N >= 3): rank 0
// receives what the others send, each message checked against what its sender put in it:
//  1. every other rank sends one message; rank 0's receives are posted before they arrive;
//  2. the same with the messages there first (stored or held before any receive);
//  3. one rank's messages of a tag arrive in order, whichever receive takes them;
//  4. a receive naming a source and one from any source, posted together: the named one gets
//     its source's message, the other the remaining one;
//  5. tags are kept apart; wait(timeout) returns HCOMM_ERR_TIMEOUT and the receive goes on;
//  6. a receive from any source still waiting when the communicator is destroyed completes
//     with HCOMM_ERR_ABORTED.
// Prints "any_source: P passed, F failed"; exits 1 on a failure.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <hcomm/hcomm.hpp>

#include "tests/integration/checks.hpp"

using namespace hcomm;
using namespace std::chrono_literals;

namespace {

constexpr size_t kCount = 1031;  // int32 elements per message
using checks::check;
using checks::failed;
using checks::passed;

/// What rank `from` sends as its `nth` message of a case.
std::vector<int32_t> payload(int from, int nth, int salt) {
  std::vector<int32_t> v(kCount);
  for (size_t i = 0; i < kCount; ++i)
    v[i] = static_cast<int32_t>(salt * 1000003 + from * 7919 + nth * 104729 + static_cast<int>(i));
  return v;
}

bool holds(const std::vector<int32_t>& got, int from, int nth, int salt) {
  return got == payload(from, nth, salt);
}

/// Rank 0 takes one message from each other rank through receives from any source.
void from_everyone(Communicator& c, int tag, bool post_first) {
  const int n = c.size(), me = c.rank();
  const std::string name = std::string("every rank once, receives posted ") +
                           (post_first ? "first" : "after the messages arrived");
  if (me != 0) {
    if (post_first) (void)c.barrier();
    auto v = payload(me, 0, tag);
    check(c.send(v.data(), kCount, DataType::int32, 0, tag).ok(), name + ": send");
    if (!post_first) (void)c.barrier();
    (void)c.barrier();
    return;
  }
  std::vector<std::vector<int32_t>> bufs(static_cast<size_t>(n - 1), std::vector<int32_t>(kCount));
  std::vector<Work> works;
  if (!post_first) {
    (void)c.barrier();                  // every message sent...
    std::this_thread::sleep_for(50ms);  // ...and arrived
  }
  for (auto& b : bufs)
    works.push_back(c.recv_async(b.data(), kCount, DataType::int32, Communicator::kAnySource, tag));
  if (post_first) (void)c.barrier();
  std::set<int> sources;
  for (size_t k = 0; k < works.size(); ++k) {
    const Status st = works[k].wait(30s);
    check(st.ok(), name + ": receive " + std::to_string(k) + ": " + st.to_string());
    const int src = works[k].source();
    sources.insert(src);
    check(src >= 1 && src < n && holds(bufs[k], src, 0, tag),
          name + ": receive " + std::to_string(k) + " holds rank " + std::to_string(src) +
              "'s message");
  }
  check(static_cast<int>(sources.size()) == n - 1, name + ": one message from every rank");
  (void)c.barrier();
}

/// Rank 1 sends three messages; rank 0 takes them from any source, in order.
void in_order(Communicator& c, int tag) {
  const int me = c.rank();
  if (me == 1)
    for (int k = 0; k < 3; ++k) {
      auto v = payload(1, k, tag);
      (void)c.send(v.data(), kCount, DataType::int32, 0, tag);
    }
  if (me == 0) {
    for (int k = 0; k < 3; ++k) {
      std::vector<int32_t> b(kCount);
      Work w = c.recv_async(b.data(), kCount, DataType::int32, Communicator::kAnySource, tag);
      const Status st = w.wait(30s);
      check(st.ok() && w.source() == 1 && holds(b, 1, k, tag),
            "rank 1's messages in order: message " + std::to_string(k) + " " + st.to_string());
    }
  }
  (void)c.barrier();
}

/// A named receive from rank 1 and one from any source; ranks 1 and 2 send one message each.
void named_and_any(Communicator& c, int tag) {
  const int me = c.rank();
  if (me == 0) {
    std::vector<int32_t> named(kCount), any(kCount);
    Work a = c.recv_async(named.data(), kCount, DataType::int32, 1, tag);
    Work b = c.recv_async(any.data(), kCount, DataType::int32, Communicator::kAnySource, tag);
    (void)c.barrier();
    check(a.wait(30s).ok() && holds(named, 1, 0, tag), "named receive gets rank 1's message");
    check(b.wait(30s).ok() && b.source() == 2 && holds(any, 2, 0, tag),
          "the receive from any source gets rank 2's (source " + std::to_string(b.source()) + ")");
    check(a.source() == -1, "a named receive has no source() (-1)");
  } else {
    (void)c.barrier();
    if (me == 1 || me == 2) {
      auto v = payload(me, 0, tag);
      (void)c.send(v.data(), kCount, DataType::int32, 0, tag);
    }
  }
  (void)c.barrier();
}

/// A receive for one tag leaves another tag's message alone; wait(timeout) times out.
void tags_and_timeout(Communicator& c, int tag) {
  const int me = c.rank();
  if (me == 2) {
    auto v = payload(2, 0, tag + 1);
    (void)c.send(v.data(), kCount, DataType::int32, 0, tag + 1);
  }
  (void)c.barrier();
  if (me == 0) {
    std::vector<int32_t> b(kCount), other(kCount);
    Work w = c.recv_async(b.data(), kCount, DataType::int32, Communicator::kAnySource, tag);
    const Status st = w.wait(100ms);
    check(st.code() == HCOMM_ERR_TIMEOUT && w.source() == -1,
          "a tag " + std::to_string(tag + 1) + " message does not match tag " +
              std::to_string(tag) + ": " + st.to_string());
    Work x = c.recv_async(other.data(), kCount, DataType::int32, Communicator::kAnySource, tag + 1);
    check(x.wait(30s).ok() && x.source() == 2 && holds(other, 2, 0, tag + 1),
          "the tag " + std::to_string(tag + 1) + " message to its receive");
    (void)c.barrier();  // now rank 1 sends the tag message the first receive waits for
    check(w.wait(30s).ok() && w.source() == 1 && holds(b, 1, 0, tag),
          "the timed-out receive went on and took rank 1's message");
  } else {
    (void)c.barrier();
    if (me == 1) {
      auto v = payload(1, 0, tag);
      (void)c.send(v.data(), kCount, DataType::int32, 0, tag);
    }
  }
  (void)c.barrier();
}

}  // namespace

int main() {
  auto made = Communicator::create_from_env();
  if (!made) {
    std::fprintf(stderr, "create: %s\n", made.status().to_string().c_str());
    return 2;
  }
  std::unique_ptr<Communicator> c = std::move(*made);
  if (c->size() < 3) {
    std::fprintf(stderr, "any_source needs at least 3 ranks\n");
    return 2;
  }
  from_everyone(*c, 10, true);
  from_everyone(*c, 11, false);
  in_order(*c, 12);
  named_and_any(*c, 13);
  tags_and_timeout(*c, 14);
  // 6. A receive nobody sends to, then the communicator goes away.
  std::vector<int32_t> b(kCount);
  Work orphan;
  if (c->rank() == 0)
    orphan = c->recv_async(b.data(), kCount, DataType::int32, Communicator::kAnySource, 99);
  (void)c->barrier();
  c.reset();
  if (orphan.valid()) {
    const Status st = orphan.wait(10s);
    check(st.code() == HCOMM_ERR_ABORTED && st.message().find("any source") != std::string::npos,
          "a waiting receive from any source fails when the communicator is destroyed: " +
              st.to_string());
  }
  std::printf("any_source: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
