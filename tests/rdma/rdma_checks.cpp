// Checks that need a real RDMA device (run inside the soft-RoCE guest, the ctest rdma_tests).
//
//   rdma_checks cache DEVICE     registration cache on DEVICE with ibv_reg_mr: miss, hit,
//                                sub-range hit, LRU eviction under a budget, explicit
//                                registration, invalidation when memory is unmapped
//   rdma_checks memlock DEVICE   a registration refused by `ulimit -l` (as an unprivileged user)
//                                gives HCOMM_ERR_MMAP naming ulimit -l
//   rdma_checks nodevice         HCOMM_TRANSPORT=rdma without a usable device: HCOMM_ERR_NO_DEVICE
//   rdma_checks comm             (every rank of a world, HCOMM_TRANSPORT=rdma) links are rdma;
//                                100 allreduces on the same aligned buffers hit the cache >= 99%;
//                                unaligned buffers go through staging (no registration) and
//                                register_memory() makes them zero-copy; a frame sent just
//                                before the peer left is still received; every result checked
// Prints "PASS ..." / "FAIL ..." lines; exit 0 when everything passed.
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hcomm/hcomm.hpp"
#include "reference/reduction.hpp"
#include "transport/rdma/rdma_device.hpp"

namespace {

using namespace hcomm;  // the status codes

int failures = 0;

void check(bool ok, const std::string& what, const std::string& detail = "") {
  std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what.c_str(), detail.empty() ? "" : ": ",
              detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

void* page_alloc(size_t bytes) {
  return std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
}

using hcomm::transport::rdma::MrCache;
using hcomm::transport::rdma::RdmaDevice;

int check_cache(const std::string& name) {
  auto device = RdmaDevice::open(name, -1, size_t{64} << 20);
  if (!device.ok()) {
    check(false, "open " + name, device.status().to_string());
    return 1;
  }
  MrCache& cache = device.value()->mr_cache();
  cache.set_budget(size_t{3} << 20);
  const size_t mib = size_t{1} << 20;
  auto* a = static_cast<std::byte*>(page_alloc(mib));
  auto* b = static_cast<std::byte*>(page_alloc(mib));
  auto* c = static_cast<std::byte*>(page_alloc(2 * mib));
  auto s0 = cache.stats();
  {
    auto h = cache.acquire(a, mib);
    check(h.ok() && static_cast<bool>(h.value()) && cache.stats().misses == s0.misses + 1,
          "first use of a buffer registers it (miss)");
  }
  {
    auto h = cache.acquire(a, mib);
    auto sub = cache.acquire(a + 4096 + 100, 5000);
    check(h.ok() && sub.ok() && cache.stats().hits == s0.hits + 2 &&
              cache.stats().misses == s0.misses + 1,
          "the same buffer and a sub-range of it are hits");
  }
  {
    auto hb = cache.acquire(b, mib);
    auto hc = cache.acquire(c, 2 * mib);  // 1 + 1 + 2 MiB > 3 MiB: the oldest unheld goes (a)
    const auto s = cache.stats();
    check(hb.ok() && hc.ok() && s.evictions >= s0.evictions + 1 && s.pinned_bytes <= (3u << 20),
          "LRU eviction keeps the pinned bytes under the budget",
          std::to_string(s.evictions - s0.evictions) + " eviction(s), " +
              std::to_string(s.pinned_bytes) + " bytes pinned");
    auto again = cache.acquire(a, mib);  // b and c are held: nothing can make room
    check(!again.ok() && again.status().code() == HCOMM_ERR_OUT_OF_MEM,
          "a registration that cannot fit while others are in use is refused (callers copy)",
          again.ok() ? "it fit" : again.status().to_string());
  }
  check(cache.register_explicit(a + 16, 1000).ok(), "explicit registration of an unaligned range");
  {
    auto h = cache.find_explicit(a + 20, 100);
    check(h.ok() && static_cast<bool>(h.value()), "an explicit registration covers sub-ranges");
  }
  check(cache.deregister_explicit(a + 16, 999).code() == HCOMM_ERR_INVALID_ARG,
        "deregistering with the wrong size is refused");
  check(cache.deregister_explicit(a + 16, 1000).ok(), "explicit deregistration");

  // Unmapping registered memory drops its registration (the invalidation safe default).
  const size_t big = 8 * mib;
  cache.set_budget(size_t{64} << 20);
  void* m = mmap(nullptr, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  std::memset(m, 1, big);
  { auto h = cache.acquire(m, big); }
  const auto before = cache.stats().invalidations;
  munmap(m, big);
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    seen = cache.stats().invalidations > before;
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  check(seen, "munmap of a cached buffer invalidates its registration");
  std::free(a);
  std::free(b);
  std::free(c);
  return failures == 0 ? 0 : 1;
}

int check_memlock(const std::string& name) {
  auto device = RdmaDevice::open(name, -1, size_t{1} << 30);
  if (!device.ok()) {
    check(false, "open " + name, device.status().to_string());
    return 1;
  }
  rlimit rl{256 * 1024, 256 * 1024};
  setrlimit(RLIMIT_MEMLOCK, &rl);
  // Root bypasses the limit (CAP_IPC_LOCK): become nobody, keeping the opened device.
  if (setgid(65534) != 0 || setuid(65534) != 0) {
    check(false, "setuid(nobody)", std::strerror(errno));
    return 1;
  }
  const size_t bytes = size_t{64} << 20;
  void* p = page_alloc(bytes);
  std::memset(p, 0, bytes);
  auto h = device.value()->mr_cache().acquire(p, bytes);
  check(
      !h.ok() && h.status().code() == HCOMM_ERR_MMAP && contains(h.status().message(), "ulimit -l"),
      "a registration over the locked-memory limit fails with HCOMM_ERR_MMAP naming ulimit -l",
      h.ok() ? "it succeeded" : h.status().to_string());
  return failures == 0 ? 0 : 1;
}

int check_nodevice() {
  hcomm::Config c;
  c.rank = 0;
  c.world_size = 1;
  c.root_addr = "127.0.0.1:29811";
  c.transport = "rdma";
  c.rdma_device = "nosuch0";
  auto comm = hcomm::Communicator::create(c);
  check(!comm.ok() && comm.status().code() == HCOMM_ERR_NO_DEVICE &&
            contains(comm.status().message(), "HCOMM_RDMA_DEVICE=nosuch0") &&
            contains(comm.status().message(), "ibv_devices"),
        "HCOMM_TRANSPORT=rdma with a missing device: HCOMM_ERR_NO_DEVICE saying what to check",
        comm.ok() ? "created" : comm.status().to_string());
  c.rdma_device = "";
  c.rdma_gid_index = 200;
  comm = hcomm::Communicator::create(c);
  check(!comm.ok() && comm.status().code() == HCOMM_ERR_NO_DEVICE &&
            contains(comm.status().message(), "no GID 200"),
        "a GID index the port does not have: HCOMM_ERR_NO_DEVICE",
        comm.ok() ? "created" : comm.status().to_string());
  return failures == 0 ? 0 : 1;
}

/// allreduce(sum) of rank-dependent floats; every element checked against hcomm_reference.
bool allreduce_ok(hcomm::Communicator& comm, float* send, float* recv, size_t count, int round) {
  const int n = comm.size();
  for (size_t i = 0; i < count; ++i)
    send[i] = static_cast<float>((comm.rank() + 1) * ((i + round) % 97));
  hcomm::Status st =
      comm.allreduce(send, recv, count, hcomm::DataType::float32, hcomm::ReduceOp::sum);
  if (!st.ok()) {
    check(false, "allreduce", st.to_string());
    return false;
  }
  namespace reference = hcomm::tools::reference;
  for (size_t i = 0; i < count; ++i) {
    const auto want = reference::reduction(hcomm::DataType::float32, hcomm::ReduceOp::sum, n,
                                           [&](int r) { return (r + 1.0) * ((i + round) % 97); });
    if (!reference::matches(want, recv[i])) return false;
  }
  return true;
}

int check_comm() {
  auto cfg = hcomm::Config::from_env();
  if (!cfg.ok()) {
    check(false, "configuration", cfg.status().to_string());
    return 1;
  }
  // Registered before any communicator (or device) exists: applies once the device opens.
  const size_t early_count = 64 * 1024;
  auto* early_block = static_cast<char*>(page_alloc(early_count * 4 + 4096));
  auto* early = reinterpret_cast<float*>(early_block + 16);
  hcomm::Status early_st = hcomm::register_memory(early, early_count * 4);
  auto created = hcomm::Communicator::create(cfg.value());
  if (!created.ok()) {
    check(false, "communicator over rdma", created.status().to_string());
    return 1;
  }
  hcomm::Communicator& comm = *created.value();
  const std::string me = "rank " + std::to_string(comm.rank());
  for (const auto& r : comm.ranks())
    if (r.rank != comm.rank())
      check(r.transport == "rdma", me + ": link to rank " + std::to_string(r.rank) + " is rdma",
            r.transport);

  check(early_st.ok(), me + ": register_memory before the communicator", early_st.to_string());
  {
    std::vector<float> out(early_count);
    auto before = hcomm::memory_registration_stats();
    const bool right = allreduce_ok(comm, early, out.data(), early_count, 3);
    auto after = hcomm::memory_registration_stats();
    check(right && after.hits > before.hits,
          me + ": a buffer registered before the device opened is sent in place",
          std::to_string(after.hits - before.hits) + " hits");
    check(hcomm::deregister_memory(early, early_count * 4).ok(), me + ": deregister it");
  }
  std::free(early_block);

  const size_t count = 256 * 1024;  // 1 MiB of floats
  auto* send = static_cast<float*>(page_alloc(count * 4 + 4096));
  auto* recv = static_cast<float*>(page_alloc(count * 4 + 4096));
  auto s0 = hcomm::memory_registration_stats();
  bool all_ok = true;
  for (int round = 0; round < 100; ++round) all_ok &= allreduce_ok(comm, send, recv, count, round);
  auto s1 = hcomm::memory_registration_stats();
  const double hits = static_cast<double>(s1.hits - s0.hits);
  const double lookups = hits + static_cast<double>(s1.misses - s0.misses);
  check(all_ok, me + ": 100 allreduces of 1 MiB on the same aligned buffers are correct");
  check(lookups > 0 && hits / lookups >= 0.99,
        me + ": registration cache hit rate over those 100 allreduces >= 99%",
        std::to_string(s1.hits - s0.hits) + " hits, " + std::to_string(s1.misses - s0.misses) +
            " misses (" + std::to_string(lookups > 0 ? 100.0 * hits / lookups : 0.0) + "%)");

  // Unaligned: copied through staging, nothing registered or looked up.
  float* usend = reinterpret_cast<float*>(reinterpret_cast<char*>(send) + 16);
  float* urecv = reinterpret_cast<float*>(reinterpret_cast<char*>(recv) + 16);
  all_ok = true;
  for (int round = 0; round < 5; ++round) all_ok &= allreduce_ok(comm, usend, urecv, count, round);
  auto s2 = hcomm::memory_registration_stats();
  check(all_ok && s2.hits == s1.hits && s2.misses == s1.misses,
        me + ": unaligned buffers fall back to staging copies with correct results",
        std::to_string(s2.hits - s1.hits) + " hits, " + std::to_string(s2.misses - s1.misses) +
            " misses");
  // Registered explicitly, the same unaligned buffers go in place.
  hcomm::Status st = hcomm::register_memory(usend, count * 4);
  check(st.ok(), me + ": register_memory of an unaligned buffer", st.to_string());
  all_ok = allreduce_ok(comm, usend, urecv, count, 7);
  auto s3 = hcomm::memory_registration_stats();
  check(all_ok && s3.hits > s2.hits, me + ": a registered unaligned buffer is sent in place",
        std::to_string(s3.hits - s2.hits) + " hits");
  check(hcomm::deregister_memory(usend, count * 4).ok(), me + ": deregister_memory");
  check(hcomm::deregister_memory(usend, count * 4).code() == HCOMM_ERR_INVALID_ARG,
        me + ": deregistering twice is refused");
  std::free(send);
  std::free(recv);

  // A frame that arrived before its sender destroyed its communicator is still delivered.
  std::vector<int32_t> last(1000);
  if (comm.rank() == 1) {
    for (size_t i = 0; i < last.size(); ++i) last[i] = static_cast<int32_t>(3 * i + 1);
    st = comm.send(last.data(), last.size(), hcomm::DataType::int32, 0, 42);
    check(st.ok(), me + ": send, then leave", st.to_string());
  } else if (comm.rank() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // rank 1 has left by now
    st = comm.recv(last.data(), last.size(), hcomm::DataType::int32, 1, 42);
    bool right = st.ok();
    for (size_t i = 0; right && i < last.size(); ++i)
      right = last[i] == static_cast<int32_t>(3 * i + 1);
    check(right, me + ": a frame sent before the peer destroyed its communicator is received",
          st.to_string());
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const std::string device = argc > 2 ? argv[2] : "";
  if (mode == "cache") return check_cache(device);
  if (mode == "memlock") return check_memlock(device);
  if (mode == "nodevice") return check_nodevice();
  if (mode == "comm") return check_comm();
  std::fprintf(stderr, "usage: rdma_checks cache DEVICE | memlock DEVICE | nodevice | comm\n");
  return 2;
}
