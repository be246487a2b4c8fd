// MrCache with a counting Registrar (no RDMA device): hits on ranges and sub-ranges, page
// rounding, merging, LRU eviction under the budget, explicit registrations, invalidation and
// errors; then the real UnmapMonitor (userfaultfd) dropping registrations of memory that is
// munmap()ed, madvise()d away or free()d, without hanging threads that touch watched pages.
#include <doctest/doctest.h>

#include <malloc.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/unit/facility.hpp"
#include "transport/rdma/mr_cache.hpp"
#include "transport/rdma/unmap_monitor.hpp"

using hcomm::Expected;
using hcomm::Status;
using hcomm::transport::rdma::MrCache;
using hcomm::transport::rdma::Registrar;
using hcomm::transport::rdma::UnmapMonitor;
using namespace std::chrono_literals;

namespace {

constexpr size_t kP = MrCache::kPage;

/// Registers nothing; remembers what is registered now and what was asked.
class CountingRegistrar final : public Registrar {
 public:
  Expected<Registration> register_range(void* addr, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!fail_next_.ok()) {
      Status s = fail_next_;
      fail_next_ = Status{};
      return s;
    }
    const uint32_t key = next_key_++;
    live_[key] = {reinterpret_cast<uintptr_t>(addr), bytes};
    last_ = {reinterpret_cast<uintptr_t>(addr), bytes};
    ++calls_;
    return Registration{reinterpret_cast<void*>(uintptr_t{key}), key, key + 1000};
  }
  void deregister(void* handle) override {
    std::lock_guard<std::mutex> lock(mutex_);
    CHECK(live_.erase(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(handle))) == 1);
  }

  void fail_next(Status s) {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_next_ = std::move(s);
  }
  size_t live() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.size();
  }
  bool is_live(uintptr_t addr, size_t bytes) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, r] : live_)
      if (r.first == addr && r.second == bytes) return true;
    return false;
  }
  std::pair<uintptr_t, size_t> last() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
  }
  size_t calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

 private:
  mutable std::mutex mutex_;
  Status fail_next_;
  uint32_t next_key_ = 1;
  std::map<uint32_t, std::pair<uintptr_t, size_t>> live_;
  std::pair<uintptr_t, size_t> last_{0, 0};
  size_t calls_ = 0;
};

// Without a monitor the addresses are never touched: any will do.
constexpr uintptr_t kBase = 0x40000000;
const void* at(size_t offset) {
  return reinterpret_cast<const void*>(kBase + offset);
}

MrCache::Handle must_acquire(MrCache& cache, const void* addr, size_t bytes) {
  auto h = cache.acquire(addr, bytes);
  REQUIRE_MESSAGE(h.ok(), h.status().to_string());
  REQUIRE(static_cast<bool>(h.value()));
  return std::move(h.value());
}

/// Runs f on its own thread; false when it has not returned within `limit` (then it is left
/// behind: a hang must fail the test, not stop the run).
bool finishes_within(std::function<void()> f, std::chrono::milliseconds limit) {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  std::thread([f = std::move(f), done] {
    f();
    done->set_value();
  }).detach();
  return finished.wait_for(limit) == std::future_status::ready;
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

char* map_anonymous(size_t bytes, void* where = nullptr) {
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (where != nullptr ? MAP_FIXED_NOREPLACE : 0);
  void* p = mmap(where, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  REQUIRE(p != MAP_FAILED);
  return static_cast<char*>(p);
}

/// The unmap-monitor cases need userfaultfd: skipped without it (failed under CI).
bool monitor_usable() {
  auto& monitor = UnmapMonitor::instance();
  const std::string& why = monitor.unavailable_reason();
  return hcomm_test::require_facility(
      "userfaultfd", monitor.available(),
      "userfaultfd with unmap events: root, or vm.unprivileged_userfaultfd=1, on Linux >= 4.11" +
          (why.empty() ? std::string() : " (here: " + why + ")"));
}

}  // namespace

TEST_CASE("mr_cache: a registration serves its range and its sub-ranges") {
  CountingRegistrar reg;
  MrCache cache(reg, 1 << 20, nullptr);
  uint32_t lkey = 0;
  {
    auto h = must_acquire(cache, at(0), 2 * kP);
    lkey = h.lkey();
    CHECK(lkey != 0);
    CHECK(h.rkey() == lkey + 1000);
  }
  auto again = must_acquire(cache, at(0), 2 * kP);
  auto inner = must_acquire(cache, at(100), 50);
  auto tail = must_acquire(cache, at(kP + 17), kP - 17);
  CHECK(again.lkey() == lkey);
  CHECK(inner.lkey() == lkey);
  CHECK(tail.lkey() == lkey);
  const auto s = cache.stats();
  CHECK(s.misses == 1);
  CHECK(s.hits == 3);
  CHECK(s.registrations == 1);
  CHECK(s.entries == 1);
  CHECK(s.pinned_bytes == 2 * kP);
  CHECK(reg.calls() == 1);
}

TEST_CASE("mr_cache: a miss registers whole pages") {
  CountingRegistrar reg;
  MrCache cache(reg, 1 << 20, nullptr);
  auto h = must_acquire(cache, at(kP + 100), 5000);  // [kP+100, kP+5100): pages 1 and 2
  CHECK(reg.last() == std::make_pair(kBase + kP, 2 * kP));
  CHECK(cache.stats().pinned_bytes == 2 * kP);
  auto bad = cache.acquire(nullptr, 10);
  CHECK(bad.status().code() == hcomm::HCOMM_ERR_INVALID_ARG);
  CHECK(cache.acquire(at(0), 0).status().code() == hcomm::HCOMM_ERR_INVALID_ARG);
}

TEST_CASE("mr_cache: overlapping and adjacent ranges merge, the old ones go when unheld") {
  CountingRegistrar reg;
  MrCache cache(reg, 1 << 20, nullptr);
  auto a = must_acquire(cache, at(0), 2 * kP);
  auto b = must_acquire(cache, at(kP), 3 * kP);  // overlaps a: one entry [0, 4 pages)
  CHECK(reg.last() == std::make_pair(kBase, 4 * kP));
  CHECK(cache.stats().entries == 1);
  CHECK(reg.live() == 2);  // a is held: its registration stays until released
  CHECK(reg.is_live(kBase, 2 * kP));
  a.reset();
  CHECK(reg.live() == 1);
  CHECK(cache.stats().pinned_bytes == 4 * kP);

  auto c = must_acquire(cache, at(4 * kP), kP);  // touches [0, 4 pages): [0, 5 pages)
  CHECK(reg.last() == std::make_pair(kBase, 5 * kP));
  CHECK(reg.live() == 2);  // b still held
  b.reset();
  CHECK(reg.live() == 1);
  CHECK(cache.stats().entries == 1);
  CHECK(must_acquire(cache, at(0), 5 * kP).lkey() == c.lkey());

  // A range between two entries with a page of gap on each side merges all three.
  c.reset();
  auto x = must_acquire(cache, at(16 * kP), kP);
  auto y = must_acquire(cache, at(18 * kP), kP);
  CHECK(cache.stats().entries == 3);
  x.reset();
  auto bridge = must_acquire(cache, at(17 * kP), kP);
  CHECK(reg.last() == std::make_pair(kBase + 16 * kP, 3 * kP));
  CHECK(cache.stats().entries == 2);
  CHECK(reg.live() == 3);  // [0,5), [16,19) and y's (held)
  y.reset();
  CHECK(reg.live() == 2);
  CHECK(cache.stats().pinned_bytes == 8 * kP);
}

TEST_CASE("mr_cache: LRU eviction keeps pinned memory under the budget, held entries stay") {
  CountingRegistrar reg;
  MrCache cache(reg, 3 * kP, nullptr);
  // One page each, a page apart (no merging).
  auto page = [](int i) { return at(static_cast<size_t>(2 * i) * kP); };
  auto key = [](int i) { return kBase + static_cast<size_t>(2 * i) * kP; };
  must_acquire(cache, page(0), kP);
  must_acquire(cache, page(1), kP);
  must_acquire(cache, page(2), kP);
  must_acquire(cache, page(0), kP);  // 0 is now the most recent; 1 the oldest
  must_acquire(cache, page(3), kP);
  CHECK(cache.stats().evictions == 1);
  CHECK_FALSE(reg.is_live(key(1), kP));
  CHECK(reg.is_live(key(0), kP));
  CHECK(reg.is_live(key(2), kP));

  auto held = must_acquire(cache, page(2), kP);  // order: 2 (held), 3, 0
  must_acquire(cache, page(4), kP);              // evicts 0
  CHECK_FALSE(reg.is_live(key(0), kP));
  must_acquire(cache, page(5), kP);  // order: 5, 4, 2 (held), 3: evicts 3, not 2
  CHECK_FALSE(reg.is_live(key(3), kP));
  CHECK(reg.is_live(key(2), kP));
  must_acquire(cache, page(6), kP);  // evicts 4
  CHECK(reg.is_live(key(2), kP));
  const auto s = cache.stats();
  CHECK(s.evictions == 4);
  CHECK(s.pinned_bytes <= 3 * kP);
  CHECK(s.entries == 3);

  cache.set_budget(kP);  // only the held one may stay
  CHECK(reg.live() == 1);
  CHECK(reg.is_live(key(2), kP));
}

TEST_CASE("mr_cache: a range that cannot fit the budget fails with OUT_OF_MEM") {
  CountingRegistrar reg;
  MrCache cache(reg, kP, nullptr);
  auto big = cache.acquire(at(0), 2 * kP);
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().code() == hcomm::HCOMM_ERR_OUT_OF_MEM);
  CHECK(big.status().message().find("HCOMM_RDMA_PIN_BUDGET_MB") != std::string::npos);
  CHECK(reg.calls() == 0);

  cache.set_budget(2 * kP);
  auto a = must_acquire(cache, at(0), kP);
  auto b = must_acquire(cache, at(2 * kP), kP);
  auto full = cache.acquire(at(4 * kP), kP);  // both held: nothing to evict
  CHECK(full.status().code() == hcomm::HCOMM_ERR_OUT_OF_MEM);
  CHECK(cache.stats().failures == 2);
  a.reset();
  must_acquire(cache, at(4 * kP), kP);  // now a is evicted
  CHECK(cache.stats().evictions == 1);
}

TEST_CASE("mr_cache: explicit registrations are never evicted and need the exact size back") {
  CountingRegistrar reg;
  MrCache cache(reg, 3 * kP, nullptr);
  REQUIRE(cache.register_explicit(at(100), 1000).ok());  // page 0
  CHECK(reg.last() == std::make_pair(kBase, kP));
  must_acquire(cache, at(2 * kP), kP);
  must_acquire(cache, at(4 * kP), kP);
  must_acquire(cache, at(6 * kP), kP);  // evicts the oldest implicit one, not the explicit
  CHECK(reg.is_live(kBase, kP));
  CHECK_FALSE(reg.is_live(kBase + 2 * kP, kP));
  cache.set_budget(0);
  CHECK(reg.live() == 1);
  CHECK(reg.is_live(kBase, kP));

  auto h = must_acquire(cache, at(0), 64);  // inside the explicit one's page: a hit
  CHECK(cache.stats().hits == 1);
  auto found = cache.find_explicit(at(200), 10);
  REQUIRE(found.ok());
  CHECK(found.value().lkey() == h.lkey());
  CHECK_FALSE(static_cast<bool>(cache.find_explicit(at(8 * kP), 10).value()));

  const size_t calls = reg.calls();
  REQUIRE(cache.register_explicit(at(200), 10).ok());  // inside: no new registration
  CHECK(reg.calls() == calls);

  Status wrong = cache.deregister_explicit(at(100), 999);
  CHECK(wrong.code() == hcomm::HCOMM_ERR_INVALID_ARG);
  CHECK(wrong.message().find("1000") != std::string::npos);
  CHECK(cache.deregister_explicit(at(4 * kP), 10).code() == hcomm::HCOMM_ERR_INVALID_ARG);
  REQUIRE(cache.deregister_explicit(at(100), 1000).ok());
  CHECK(reg.is_live(kBase, kP));  // the inner registration still uses it
  REQUIRE(cache.deregister_explicit(at(200), 10).ok());
  CHECK(reg.is_live(kBase, kP));  // and a Handle
  h.reset();
  found.value().reset();
  CHECK(reg.live() == 0);
  CHECK(cache.stats().entries == 0);
}

TEST_CASE("mr_cache: an explicit registration over an implicit entry replaces it") {
  CountingRegistrar reg;
  MrCache cache(reg, 1 << 20, nullptr);
  auto held = must_acquire(cache, at(0), 2 * kP);
  REQUIRE(cache.register_explicit(at(kP), 3 * kP).ok());
  CHECK(cache.stats().entries == 1);
  CHECK(reg.live() == 2);  // the implicit one is held
  held.reset();
  CHECK(reg.live() == 1);
  // Served only inside what the application registered.
  auto in = must_acquire(cache, at(kP), 3 * kP);
  CHECK(cache.stats().hits == 1);
  auto outside = must_acquire(cache, at(0), kP);
  CHECK(cache.stats().misses == 2);
}

TEST_CASE("mr_cache: invalidate retires overlapping entries, held ones go when released") {
  CountingRegistrar reg;
  MrCache cache(reg, 1 << 20, nullptr);
  auto a = must_acquire(cache, at(0), 2 * kP);
  must_acquire(cache, at(8 * kP), kP);
  cache.invalidate(at(kP + 5), 1);
  auto s = cache.stats();
  CHECK(s.invalidations == 1);
  CHECK(s.entries == 1);
  CHECK(reg.is_live(kBase, 2 * kP));  // held
  auto fresh = must_acquire(cache, at(0), 2 * kP);
  CHECK(cache.stats().misses == 3);
  CHECK(fresh.lkey() != a.lkey());
  CHECK(reg.live() == 3);
  a.reset();
  CHECK(reg.live() == 2);
  cache.invalidate(at(2 * kP), 6 * kP);  // touches both, overlaps neither
  CHECK(cache.stats().invalidations == 1);
  cache.invalidate(at(0), 16 * kP);
  CHECK(cache.stats().invalidations == 3);
  fresh.reset();
  CHECK(reg.live() == 0);
}

TEST_CASE("mr_cache: a registrar error reaches the caller") {
  CountingRegistrar reg;
  MrCache cache(reg, 1 << 20, nullptr);
  reg.fail_next(Status{hcomm::HCOMM_ERR_MMAP, "ibv_reg_mr: Cannot allocate memory (ulimit -l)"});
  auto h = cache.acquire(at(0), kP);
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().code() == hcomm::HCOMM_ERR_MMAP);
  CHECK(h.status().message().find("ulimit -l") != std::string::npos);
  reg.fail_next(Status{hcomm::HCOMM_ERR_MMAP, "no"});
  CHECK(cache.register_explicit(at(0), kP).code() == hcomm::HCOMM_ERR_MMAP);
  auto s = cache.stats();
  CHECK(s.failures == 2);
  CHECK(s.entries == 0);
  CHECK(s.pinned_bytes == 0);
  must_acquire(cache, at(0), kP);
}

TEST_CASE("mr_cache: a range the monitor cannot watch is not kept past its Handle") {
  CountingRegistrar reg;
  MrCache cache(reg, 1 << 20);
  // Addresses nothing is mapped at: no monitor can watch them.
  char* hole = map_anonymous(4 * kP);
  REQUIRE(munmap(hole, 4 * kP) == 0);
  {
    auto h = must_acquire(cache, hole, kP);
    auto again = must_acquire(cache, hole, 10);  // held: still found
    CHECK(again.lkey() == h.lkey());
  }
  CHECK(reg.live() == 0);
  CHECK(cache.stats().entries == 0);
  must_acquire(cache, hole, kP);
  CHECK(cache.stats().misses == 2);
}

TEST_CASE("mr_cache + unmap monitor: munmap drops the registration before the next lookup") {
  if (!monitor_usable()) return;
  CountingRegistrar reg;
  MrCache cache(reg, 64 << 20);
  constexpr size_t kBytes = 1 << 20;
  char* p = map_anonymous(kBytes);
  std::memset(p, 1, kBytes);
  must_acquire(cache, p, kBytes);
  CHECK(cache.stats().entries == 1);  // watched, so kept
  CHECK(reg.live() == 1);
  must_acquire(cache, p + 100, 100);
  CHECK(cache.stats().hits == 1);

  REQUIRE(finishes_within([p] { munmap(p, kBytes); }, 2000ms));
  // No waiting: acquire() itself waits for events already read (the munmap returned).
  char* q = map_anonymous(kBytes, p);
  REQUIRE(q == p);
  auto h = must_acquire(cache, q, kBytes);
  auto s = cache.stats();
  CHECK(s.invalidations == 1);
  CHECK(s.misses == 2);
  CHECK(s.registrations == 2);
  CHECK(reg.live() == 1);
  h.reset();
  REQUIRE(finishes_within([q] { munmap(q, kBytes); }, 2000ms));
  CHECK(eventually([&] { return reg.live() == 0; }, 1000ms));
}

TEST_CASE("mr_cache + unmap monitor: MADV_DONTNEED drops it, touching the pages does not hang") {
  if (!monitor_usable()) return;
  CountingRegistrar reg;
  MrCache cache(reg, 64 << 20);
  constexpr size_t kBytes = 1 << 20;
  char* p = map_anonymous(kBytes);
  std::memset(p, 7, kBytes);
  must_acquire(cache, p, kBytes);
  REQUIRE(finishes_within([p] { madvise(p + 256 * 1024, 64 * 1024, MADV_DONTNEED); }, 2000ms));
  // Touched at once, maybe before the monitor unregistered the pages: a page fault it answers.
  int seen = -1;
  REQUIRE(finishes_within(
      [p, &seen] {
        volatile char* c = p + 256 * 1024;
        seen = c[0];
        c[kP] = 5;
      },
      2000ms));
  CHECK(seen == 0);
  CHECK(p[256 * 1024 + kP] == 5);
  CHECK(p[0] == 7);
  CHECK(eventually([&] { return cache.stats().invalidations == 1; }, 1000ms));
  must_acquire(cache, p, kBytes);
  CHECK(cache.stats().misses == 2);
  REQUIRE(finishes_within([p] { munmap(p, kBytes); }, 2000ms));
  CHECK(eventually([&] { return cache.stats().invalidations == 2; }, 1000ms));
}

TEST_CASE("mr_cache + unmap monitor: first touches of watched untouched pages do not hang") {
  if (!monitor_usable()) return;
  CountingRegistrar reg;
  MrCache cache(reg, 64 << 20);
  constexpr size_t kBytes = 1 << 20;
  char* p = map_anonymous(kBytes);  // nothing mapped yet: every first touch faults to the monitor
  must_acquire(cache, p, kBytes);
  int seen = -1;
  REQUIRE(finishes_within(
      [p, &seen] {
        volatile char* c = p;
        seen = c[0];
        for (size_t off = kP; off < kBytes; off += 16 * kP) c[off] = 9;
      },
      2000ms));
  CHECK(seen == 0);
  CHECK(p[kP] == 9);
  CHECK(cache.stats().invalidations == 0);  // faults are not changes
  must_acquire(cache, p, kBytes);
  CHECK(cache.stats().hits == 1);
  REQUIRE(finishes_within([p] { munmap(p, kBytes); }, 2000ms));
  CHECK(eventually([&] { return cache.stats().invalidations == 1; }, 1000ms));
}

TEST_CASE("mr_cache + unmap monitor: merged and shared ranges stay watched") {
  if (!monitor_usable()) return;
  CountingRegistrar reg;
  MrCache one(reg, 64 << 20);
  MrCache two(reg, 64 << 20);
  constexpr size_t kBytes = 1 << 20;
  char* p = map_anonymous(kBytes);
  std::memset(p, 1, kBytes);

  // Merged: the union took over the first entry's pages when the first entry let them go.
  must_acquire(one, p, 256 * 1024);
  must_acquire(one, p + 256 * 1024, 256 * 1024);
  CHECK(one.stats().entries == 1);
  REQUIRE(finishes_within([p] { munmap(p + kP, kP); }, 2000ms));
  CHECK(eventually([&] { return one.stats().invalidations == 1; }, 1000ms));

  // Shared: two caches (two devices) watch the same pages; one letting go leaves two's watch.
  char* q = p + 512 * 1024;
  must_acquire(one, q, 256 * 1024);
  must_acquire(two, q, 512 * 1024);
  one.set_budget(0);
  CHECK(one.stats().entries == 0);
  REQUIRE(finishes_within([q] { munmap(q + 4 * kP, kP); }, 2000ms));  // inside both
  CHECK(eventually([&] { return two.stats().invalidations == 1; }, 1000ms));
  CHECK(one.stats().invalidations == 1);
  REQUIRE(finishes_within([p] { munmap(p, kBytes); }, 2000ms));
}

TEST_CASE("mr_cache + unmap monitor: free() of an 8 MiB malloc drops its registration") {
  if (!monitor_usable()) return;
  // glibc raises its mmap threshold after freeing a mapped chunk; fix it so 8 MiB is mapped.
  // And it maps a chunk only when no free memory of its heap can hold it: after other cases in
  // this process freed large buffers, 8 MiB would come from the heap (free() then unmaps
  // nothing). malloc_trim gives that free memory back first.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  malloc_trim(0);
  CountingRegistrar reg;
  MrCache cache(reg, 64 << 20);
  constexpr size_t kBytes = 8 << 20;
  char* b = static_cast<char*>(malloc(kBytes));
  REQUIRE(b != nullptr);
  // glibc marks a chunk it mmap()ed with bit 1 (IS_MMAPPED) of its size field, the word before
  // the pointer: the precondition of this case, checked rather than assumed.
  size_t chunk_size = 0;
  std::memcpy(&chunk_size, b - sizeof(size_t), sizeof(size_t));
  REQUIRE_MESSAGE((chunk_size & 2) != 0, "malloc(8 MiB) did not mmap() its chunk");
  std::memset(b, 3, kBytes);
  must_acquire(cache, b, kBytes);
  CHECK(cache.stats().entries == 1);
  REQUIRE(finishes_within([b] { free(b); }, 2000ms));
  CHECK(eventually([&] { return cache.stats().invalidations == 1; }, 1000ms));
  CHECK(reg.live() == 0);
}

TEST_CASE("mr_cache + unmap monitor: a forked child does not use the parent's monitor") {
  if (!monitor_usable()) return;
  CountingRegistrar reg;
  MrCache cache(reg, 64 << 20);
  constexpr size_t kBytes = 1 << 20;
  char* p = map_anonymous(kBytes);
  std::memset(p, 1, kBytes);
  must_acquire(cache, p, kBytes);  // watched in the parent
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(5);  // a hang is a failure, not a stuck test
    if (UnmapMonitor::instance().available()) _exit(1);
    if (munmap(p, kBytes) != 0) _exit(2);  // the child's copy is not watched: must not block
    CountingRegistrar child_reg;
    MrCache child(child_reg, 1 << 20);
    char* m = static_cast<char*>(
        mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (!child.acquire(m, kBytes).ok()) _exit(3);
    if (child_reg.live() != 0) _exit(4);  // not watched, so not kept
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(cache.stats().invalidations == 0);  // the child's munmap is not the parent's
  REQUIRE(finishes_within([p] { munmap(p, kBytes); }, 2000ms));
  CHECK(eventually([&] { return cache.stats().invalidations == 1; }, 1000ms));
}
