#include "transport/rdma/unmap_monitor.hpp"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

#include "core/log.hpp"

// Why two threads: the thread that calls munmap() on a watched range sleeps in the kernel until
// the event is read. If the thread reading events also ran the listeners, a listener that frees
// memory (glibc may trim a watched heap page right then) or waits for a lock held by a thread
// inside munmap() would wait for itself. So the reader only reads, answers page faults and
// queues ranges; the dispatcher runs the listeners and may block.
//
// Race analysis (Linux fs/userfaultfd.c, checked on 6.18 with a probe): UNMAP/REMOVE/REMAP
// events are completed when read(2) copies them out, so munmap() returns as soon as the reader has
// read the event, before any listener ran. An application that munmap()s, maps new pages at the
// same address and sends from them at once would find the old registration still cached.
// quiesce() closes this: reads_started_ is bumped before each read(), so a thread whose munmap()
// has returned sees an in-flight read and waits until the dispatcher has run the listeners.
// What remains is an unmap concurrent with the lookup of the same memory, which is the
// application freeing a buffer it is sending from.

namespace hcomm::transport::rdma {
namespace {

UnmapMonitor* g_monitor = nullptr;

std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + strerror(err);
}

}  // namespace

UnmapMonitor& UnmapMonitor::instance() {
  static UnmapMonitor* monitor = new UnmapMonitor();  // leaked on purpose (see the header)
  return *monitor;
}

UnmapMonitor::UnmapMonitor() {
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) page_ = static_cast<size_t>(page);
  int fd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  if (fd < 0 && errno == EPERM) {
    // vm.unprivileged_userfaultfd=0 without CAP_SYS_PTRACE: user-mode faults only. A kernel-mode
    // fault on a watched missing page (a syscall writing into it) then fails with EFAULT instead
    // of reaching us; ibv_reg_mr has populated registered pages, so that only happens between an
    // madvise(MADV_DONTNEED) and the dispatcher unregistering the range.
    fd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
  }
  if (fd < 0) {
    reason_ = errno_text("userfaultfd()", errno) +
              (errno == EPERM ? " (needs vm.unprivileged_userfaultfd=1, CAP_SYS_PTRACE or Linux "
                                ">= 5.11 for user-mode-only)"
                              : "");
  } else {
    uffdio_api api{};
    api.api = UFFD_API;
    api.features = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_REMAP;
    if (ioctl(fd, UFFDIO_API, &api) != 0) {
      reason_ = errno_text("UFFDIO_API with unmap/remove/remap events (Linux >= 4.11)", errno);
      close(fd);
    } else {
      fd_ = fd;
    }
  }
  if (fd_ < 0) {
    HCOMM_LOG(info, core::log::kNet,
              "no unmap monitor (%s): RDMA registrations are not kept past each operation",
              reason_.c_str());
  }
  g_monitor = this;
  // The child of fork() has the descriptor but not the threads, and its mappings are no longer
  // registered (no UFFD_FEATURE_EVENT_FORK); ioctls on the descriptor would act on the parent.
  pthread_atfork(nullptr, nullptr, [] {
    if (g_monitor != nullptr) g_monitor->forked_.store(true);
  });
}

bool UnmapMonitor::available() const {
  return fd_ >= 0 && !forked_.load();
}

const std::string& UnmapMonitor::unavailable_reason() const {
  static const std::string forked = "forked child: the userfaultfd belongs to the parent";
  return forked_.load() ? forked : reason_;
}

bool UnmapMonitor::start_threads_locked() {
  if (threads_started_) return true;
  // The threads take no signals meant for the application's own threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  bool ok = true;
  try {
    // Detached and never stopped: static destructors may still munmap() watched memory, and
    // that blocks until the reader reads the event. exit_group() ends them.
    std::thread([this] { reader_loop(); }).detach();
    std::thread([this] { dispatch_loop(); }).detach();
  } catch (const std::system_error& e) {
    // Only the reader can have started; it answers faults and queues events harmlessly.
    HCOMM_LOG(warn, core::log::kNet, "cannot start the unmap monitor threads: %s", e.what());
    ok = false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  threads_started_ = ok;
  return ok;
}

bool UnmapMonitor::watch(void* addr, size_t bytes) {
  if (!available() || bytes == 0) return false;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(addr) / page_ * page_;
  const uintptr_t end = reinterpret_cast<uintptr_t>(addr) + bytes;
  if (end < lo || end > UINTPTR_MAX - page_) return false;
  const uintptr_t hi = (end + page_ - 1) / page_ * page_;

  std::lock_guard<std::mutex> lock(mutex_);
  if (!start_threads_locked()) return false;
  split_at(lo);
  split_at(hi);
  // Register what is not registered yet: gaps, and segments an event disarmed.
  std::vector<Range> todo, gaps;
  auto add = [](std::vector<Range>& v, uintptr_t a, uintptr_t b) {
    if (!v.empty() && v.back().hi == a)
      v.back().hi = b;
    else
      v.push_back({a, b});
  };
  uintptr_t cur = lo;
  for (auto it = segments_.lower_bound(lo); it != segments_.end() && it->first < hi; ++it) {
    if (cur < it->first) {
      add(todo, cur, it->first);
      gaps.push_back({cur, it->first});
    }
    if (!it->second.armed) add(todo, it->first, it->second.end);
    cur = it->second.end;
  }
  if (cur < hi) {
    add(todo, cur, hi);
    gaps.push_back({cur, hi});
  }
  for (size_t i = 0; i < todo.size(); ++i) {
    if (!uffd_register(todo[i].lo, todo[i].hi)) {
      for (size_t j = 0; j < i; ++j) uffd_unregister(todo[j].lo, todo[j].hi);
      coalesce(lo, hi);
      return false;
    }
  }
  for (auto it = segments_.lower_bound(lo); it != segments_.end() && it->first < hi; ++it) {
    ++it->second.count;
    it->second.armed = true;
  }
  for (const Range& g : gaps) segments_.emplace(g.lo, Segment{g.hi, 1, true});
  coalesce(lo, hi);
  return true;
}

void UnmapMonitor::unwatch(void* addr, size_t bytes) {
  if (!available() || bytes == 0) return;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(addr) / page_ * page_;
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(addr) + bytes + page_ - 1) / page_ * page_;
  std::lock_guard<std::mutex> lock(mutex_);
  split_at(lo);
  split_at(hi);
  std::vector<Range> freed;
  for (auto it = segments_.lower_bound(lo); it != segments_.end() && it->first < hi;) {
    if (it->second.count > 0) --it->second.count;
    if (it->second.count == 0) {
      if (!freed.empty() && freed.back().hi == it->first)
        freed.back().hi = it->second.end;
      else
        freed.push_back({it->first, it->second.end});
      it = segments_.erase(it);
    } else {
      ++it;
    }
  }
  // Also when disarmed: the kernel may hold more than the bookkeeping says, never less.
  for (const Range& r : freed) uffd_unregister(r.lo, r.hi);
  coalesce(lo, hi);
}

// In a forked child no listener runs, and listeners_mutex_ may have been copied held.
int UnmapMonitor::subscribe(Listener listener) {
  if (forked_.load()) return 0;
  std::lock_guard<std::mutex> lock(listeners_mutex_);
  const int id = next_listener_++;
  listeners_.emplace_back(id, std::move(listener));
  return id;
}

void UnmapMonitor::unsubscribe(int id) {
  if (forked_.load()) return;
  std::lock_guard<std::mutex> lock(listeners_mutex_);
  for (auto it = listeners_.begin(); it != listeners_.end(); ++it) {
    if (it->first == id) {
      listeners_.erase(it);
      return;
    }
  }
}

void UnmapMonitor::quiesce() {
  if (!available()) return;
  const uint64_t target = reads_started_.load();
  if (reads_done_.load() >= target) return;
  std::unique_lock<std::mutex> lock(queue_mutex_);
  done_cv_.wait(lock, [&] { return reads_done_.load() >= target; });
}

void UnmapMonitor::split_at(uintptr_t at) {
  auto it = segments_.upper_bound(at);
  if (it == segments_.begin()) return;
  --it;
  if (it->first < at && at < it->second.end) {
    Segment right = it->second;
    it->second.end = at;
    segments_.emplace(at, right);
  }
}

void UnmapMonitor::coalesce(uintptr_t lo, uintptr_t hi) {
  auto it = segments_.lower_bound(lo);
  if (it != segments_.begin()) --it;
  while (it != segments_.end() && it->first <= hi) {
    auto next = std::next(it);
    if (next != segments_.end() && next->first == it->second.end &&
        next->second.count == it->second.count && next->second.armed == it->second.armed) {
      it->second.end = next->second.end;
      segments_.erase(next);
    } else {
      it = next;
    }
  }
}

bool UnmapMonitor::uffd_register(uintptr_t lo, uintptr_t hi) {
  uffdio_register reg{};
  reg.range.start = lo;
  reg.range.len = hi - lo;
  reg.mode = UFFDIO_REGISTER_MODE_MISSING;
  return ioctl(fd_, UFFDIO_REGISTER, &reg) == 0;
}

void UnmapMonitor::uffd_unregister(uintptr_t lo, uintptr_t hi) {
  uffdio_range range{lo, hi - lo};
  ioctl(fd_, UFFDIO_UNREGISTER, &range);  // EINVAL when already unmapped: nothing to undo
}

bool UnmapMonitor::resolve_fault(uintptr_t page) {
  // A watched page with nothing mapped was touched: it was never touched since the watch began,
  // or it was given back (MADV_DONTNEED) and the dispatcher has not unregistered it yet. Anonymous
  // memory reads zeros there, so map the zero page; a write then copies it as usual.
  uffdio_zeropage zero{};
  zero.range.start = page;
  zero.range.len = page_;
  if (ioctl(fd_, UFFDIO_ZEROPAGE, &zero) == 0) return true;
  uffdio_range range{page, page_};
  if (errno == EEXIST) {  // mapped meanwhile: the faulting thread only needs waking
    ioctl(fd_, UFFDIO_WAKE, &range);
    return true;
  }
  // EAGAIN (a layout change is being reported) or no zero page here (hugetlbfs): stop watching
  // the page so the retried fault takes the ordinary path, and report it as changed.
  ioctl(fd_, UFFDIO_UNREGISTER, &range);
  ioctl(fd_, UFFDIO_WAKE, &range);
  return false;
}

void UnmapMonitor::reader_loop() {
  constexpr size_t kBatch = 32;
  uffd_msg msgs[kBatch];
  Range ranges[kBatch * 2];
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, -1) < 0) {
      if (errno != EINTR) usleep(1000);
      continue;
    }
    const uint64_t seq = reads_started_.fetch_add(1) + 1;
    const ssize_t got = read(fd_, msgs, sizeof(msgs));
    size_t n = 0;
    for (ssize_t i = 0; got > 0 && i < got / static_cast<ssize_t>(sizeof(uffd_msg)); ++i) {
      const uffd_msg& m = msgs[i];
      switch (m.event) {
        case UFFD_EVENT_PAGEFAULT: {
          const uintptr_t page = m.arg.pagefault.address / page_ * page_;
          if (!resolve_fault(page)) ranges[n++] = {page, page + page_};
          break;
        }
        case UFFD_EVENT_UNMAP:
        case UFFD_EVENT_REMOVE:
          ranges[n++] = {m.arg.remove.start, m.arg.remove.end};
          break;
        case UFFD_EVENT_REMAP:
          // The old range is gone; the new one carries the registration along: forget both.
          ranges[n++] = {m.arg.remap.from, m.arg.remap.from + m.arg.remap.len};
          ranges[n++] = {m.arg.remap.to, m.arg.remap.to + m.arg.remap.len};
          break;
        default:
          break;
      }
    }
    publish(ranges, n, seq);
  }
}

void UnmapMonitor::publish(const Range* ranges, size_t n, uint64_t seq) {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    for (size_t i = 0; i < n; ++i) {
      if (queued_ < kQueue) {
        queue_[queued_++] = ranges[i];
      } else if (!overflow_) {
        overflow_ = true;
        overflow_range_ = ranges[i];
      } else {  // over-invalidating is safe; losing a range is not
        overflow_range_.lo = std::min(overflow_range_.lo, ranges[i].lo);
        overflow_range_.hi = std::max(overflow_range_.hi, ranges[i].hi);
      }
    }
    published_seq_ = seq;
  }
  work_cv_.notify_one();
}

void UnmapMonitor::dispatch_loop() {
  Range batch[kQueue + 1];
  for (;;) {
    size_t n = 0;
    uint64_t seq = 0;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      work_cv_.wait(lock, [&] { return published_seq_ > reads_done_.load(); });
      for (; n < queued_; ++n) batch[n] = queue_[n];
      queued_ = 0;
      if (overflow_) batch[n++] = overflow_range_;
      overflow_ = false;
      seq = published_seq_;
    }
    if (n > 0) {
      {
        // Disarm first: a watch() from now on registers the new mapping again.
        std::lock_guard<std::mutex> lock(mutex_);
        for (size_t i = 0; i < n; ++i) {
          const uintptr_t lo = batch[i].lo / page_ * page_;
          const uintptr_t hi = (batch[i].hi + page_ - 1) / page_ * page_;
          split_at(lo);
          split_at(hi);
          for (auto it = segments_.lower_bound(lo); it != segments_.end() && it->first < hi; ++it)
            it->second.armed = false;
          uffd_unregister(lo, hi);  // removed (madvise) pages stay registered otherwise
          coalesce(lo, hi);
        }
      }
      std::lock_guard<std::mutex> lock(listeners_mutex_);
      for (size_t i = 0; i < n; ++i) {
        for (auto& [id, listener] : listeners_) {
          try {
            listener(batch[i].lo, batch[i].hi);
          } catch (...) {  // a listener's failure must not end the monitor
          }
        }
      }
    }
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      reads_done_.store(seq);
    }
    done_cv_.notify_all();
  }
}

}  // namespace hcomm::transport::rdma
