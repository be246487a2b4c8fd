#include "observe/stats_segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "core/errno_text.hpp"

namespace hcomm::observe {

static_assert(std::atomic<uint64_t>::is_always_lock_free &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "the stats segment needs lock-free atomics (shared between processes)");

namespace {

constexpr const char* kDir = "/dev/shm";
constexpr const char* kPrefix = "hcomm-stats.";

void copy_text(char* dst, size_t n, const std::string& s) {
  std::memset(dst, 0, n);
  std::memcpy(dst, s.data(), std::min(s.size(), n - 1));
}

bool alive(int pid) {
  return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

/// Calls `each(path, pid)` for every stats segment whose process is alive; removes the others
/// (a process killed before it could remove its own).
template <class Each>
void for_each_live_segment(Each each) {
  DIR* dir = ::opendir(kDir);
  if (dir == nullptr) return;
  const size_t prefix = std::strlen(kPrefix);
  while (dirent* e = ::readdir(dir)) {
    if (std::strncmp(e->d_name, kPrefix, prefix) != 0) continue;
    const std::string path = std::string(kDir) + "/" + e->d_name;
    const int pid = std::atoi(e->d_name + prefix);
    if (!alive(pid)) {
      ::unlink(path.c_str());
      continue;
    }
    each(path, pid);
  }
  ::closedir(dir);
}

}  // namespace

Expected<std::unique_ptr<StatsPublisher>> StatsPublisher::create(const std::string& host) {
  for_each_live_segment([](const std::string&, int) {});  // the dead processes' go
  const std::string path = std::string(kDir) + "/" + kPrefix + std::to_string(::getpid());
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status(HCOMM_ERR_MMAP, core::errno_text("cannot create " + path, errno));
  if (::ftruncate(fd, sizeof(StatsSegment)) != 0) {
    const int e = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return Status(HCOMM_ERR_MMAP, core::errno_text("cannot size " + path, e));
  }
  void* p = ::mmap(nullptr, sizeof(StatsSegment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    ::unlink(path.c_str());
    return Status(HCOMM_ERR_MMAP, core::errno_text("cannot map " + path, e));
  }
  auto* seg = new (p) StatsSegment{};  // zeroed: every slot free
  seg->version = kStatsVersion;
  seg->pid = static_cast<int32_t>(::getpid());
  copy_text(seg->host, sizeof seg->host, host);
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(seg->magic, kStatsMagic, sizeof kStatsMagic);  // readers check it last written
  return std::unique_ptr<StatsPublisher>(new StatsPublisher(seg, path));
}

StatsPublisher::~StatsPublisher() {
  ::munmap(seg_, sizeof(StatsSegment));
  ::unlink(path_.c_str());
}

StatsComm* StatsPublisher::claim(const std::string& id, int rank, int size) {
  for (StatsComm& c : seg_->comms) {
    if (c.state.load(std::memory_order_acquire) == StatsComm::kLive) continue;
    c.state.store(StatsComm::kFree, std::memory_order_relaxed);
    c.rank = rank;
    c.size = size;
    c.num_transports = 0;
    copy_text(c.id, sizeof c.id, id);
    for (auto* counter :
         {&c.ops, &c.bytes, &c.in_flight, &c.oldest_age_us, &c.oldest_seq, &c.failovers,
          &c.failbacks, &c.gray_failures, &c.retransmits, &c.link_rtt_us})
      counter->store(0, std::memory_order_relaxed);
    c.qos_min.store(0, std::memory_order_relaxed);
    c.qos_max.store(100, std::memory_order_relaxed);
    for (StatsTransport& t : c.transports) {
      std::memset(t.name, 0, sizeof t.name);
      t.bytes_sent.store(0, std::memory_order_relaxed);
    }
    c.state.store(StatsComm::kLive, std::memory_order_release);
    return &c;
  }
  return nullptr;
}

void StatsPublisher::release(StatsComm* slot) {
  if (slot != nullptr) slot->state.store(StatsComm::kClosed, std::memory_order_release);
}

std::vector<std::unique_ptr<StatsView>> StatsView::attach_all() {
  std::vector<std::unique_ptr<StatsView>> out;
  for_each_live_segment([&out](const std::string& path, int) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    void* p = ::mmap(nullptr, sizeof(StatsSegment), PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return;
    const auto* seg = static_cast<const StatsSegment*>(p);
    // A segment being created, or of another version, is skipped (and looked at next time).
    if (std::memcmp(seg->magic, kStatsMagic, sizeof kStatsMagic) != 0 ||
        seg->version != kStatsVersion) {
      ::munmap(p, sizeof(StatsSegment));
      return;
    }
    out.push_back(std::unique_ptr<StatsView>(new StatsView(seg)));
  });
  return out;
}

StatsView::~StatsView() {
  ::munmap(const_cast<StatsSegment*>(seg_), sizeof(StatsSegment));
}

}  // namespace hcomm::observe
