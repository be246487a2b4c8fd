// UnmapMonitor: tells the registration caches when memory they registered changes mapping.
//
// A cached registration pins the pages that were mapped when it was made. If the application
// frees a buffer (glibc munmap()s large chunks, trims with madvise(MADV_DONTNEED) and brk) and the
// same addresses come back with new pages, the NIC would read the old ones: silent corruption.
// This is the process-wide userfaultfd monitor (what libfabric's "uffd" monitor does): watched
// ranges report UNMAP, REMOVE and REMAP events, which reach every subscriber (MrCache::invalidate).
//
// The kernel makes the thread calling munmap()/madvise()/mremap() wait until the event has been
// read, but not until the subscribers have run. quiesce() closes that gap for the caches: it
// waits until every event read so far has been passed on, so a lookup after it never returns a
// registration of memory whose unmap has already returned.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hcomm::transport::rdma {

class UnmapMonitor {
 public:
  /// The process' monitor. Opens the userfaultfd on first use; its two threads start with the
  /// first watch(). Never destroyed: the threads must outlive static destructors that free memory.
  static UnmapMonitor& instance();

  UnmapMonitor(const UnmapMonitor&) = delete;
  UnmapMonitor& operator=(const UnmapMonitor&) = delete;

  /// userfaultfd is usable here (false in a forked child: the monitor belongs to the parent).
  bool available() const;
  /// Why available() is false, for a log line; empty when it is true.
  const std::string& unavailable_reason() const;

  /// Watches [addr, addr+bytes) (rounded out to pages). Watches may overlap (they are counted);
  /// each successful watch() needs one unwatch() of the same range. False when the range cannot
  /// be watched: not anonymous or shmem memory, not all mapped, owned by another userfaultfd, or
  /// no userfaultfd at all.
  bool watch(void* addr, size_t bytes);
  void unwatch(void* addr, size_t bytes);

  /// Called on the monitor's dispatch thread with the changed range [lo, hi). A listener must not
  /// subscribe, unsubscribe or call quiesce() (the dispatch thread would wait on itself).
  using Listener = std::function<void(uintptr_t lo, uintptr_t hi)>;
  int subscribe(Listener listener);
  /// After it returns the listener is not running and will not run again.
  void unsubscribe(int id);

  /// Returns once every event read before the call has been passed to the listeners. Cheap when
  /// nothing is in flight (two atomic loads). Not from a listener.
  void quiesce();

 private:
  struct Segment {
    uintptr_t end = 0;
    uint32_t count = 0;  // watch() calls covering it
    bool armed = false;  // registered with the userfaultfd (false after an event took it away)
  };
  struct Range {
    uintptr_t lo = 0;
    uintptr_t hi = 0;
  };
  static constexpr size_t kQueue = 256;

  UnmapMonitor();
  bool start_threads_locked();
  void reader_loop();
  void dispatch_loop();
  bool resolve_fault(uintptr_t page);
  void publish(const Range* ranges, size_t n, uint64_t seq);
  void split_at(uintptr_t at);
  void coalesce(uintptr_t lo, uintptr_t hi);
  bool uffd_register(uintptr_t lo, uintptr_t hi);
  void uffd_unregister(uintptr_t lo, uintptr_t hi);

  int fd_ = -1;
  size_t page_ = 4096;
  std::string reason_;
  std::atomic<bool> forked_{false};

  // Watched ranges: disjoint segments keyed by start. Guards the uffd registrations too.
  std::mutex mutex_;
  std::map<uintptr_t, Segment> segments_;
  bool threads_started_ = false;

  // Reader -> dispatcher. The reader never waits on anything but this mutex, whose holders never
  // block, allocate or free: a thread blocked in munmap() waits for the reader.
  std::mutex queue_mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  Range queue_[kQueue];
  size_t queued_ = 0;
  bool overflow_ = false;  // the queue was full: overflow_range_ covers what did not fit
  Range overflow_range_;
  uint64_t published_seq_ = 0;              // the last read() whose events are queued
  std::atomic<uint64_t> reads_started_{0};  // bumped before each read(): see quiesce()
  std::atomic<uint64_t> reads_done_{0};     // every event of reads up to this one dispatched

  std::mutex listeners_mutex_;  // held while listeners run
  std::vector<std::pair<int, Listener>> listeners_;
  int next_listener_ = 1;
};

}  // namespace hcomm::transport::rdma
