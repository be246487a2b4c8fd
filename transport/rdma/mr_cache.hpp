// MrCache: the memory-registration cache of one RDMA protection domain (one per device).
//
// Registering memory (ibv_reg_mr) pins pages and costs far more than sending a small message, so
// buffers are registered on first use and the registration is kept for the next send from them.
// Entries are keyed by address range: a send from inside a registered range is a hit; a miss
// registers whole pages and merges with neighbouring entries, so memory is covered once. Kept
// registrations stay under a pinned-memory budget (LRU eviction of unused ones) and are dropped
// when their memory changes mapping (UnmapMonitor); where that cannot be watched, a registration
// lives only as long as the operation that needed it. The Registrar is what really registers, so
// the logic here is tested without an RDMA device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "hcomm/status.hpp"
#include "transport/rdma/unmap_monitor.hpp"

namespace hcomm::transport::rdma {

/// What actually registers memory with a device (ibv_reg_mr on a protection domain in
/// production). Errors: HCOMM_ERR_MMAP naming `ulimit -l` for ENOMEM/EPERM.
class Registrar {
 public:
  struct Registration {
    void* handle = nullptr;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
  };
  virtual Expected<Registration> register_range(void* addr, size_t bytes) = 0;
  virtual void deregister(void* handle) = 0;

 protected:
  ~Registrar() = default;
};

struct MrCacheStats {
  uint64_t hits = 0;           // acquire() served by an existing registration (also sub-ranges)
  uint64_t misses = 0;         // acquire() that had to register
  uint64_t registrations = 0;  // register_range calls that succeeded
  uint64_t evictions = 0;      // LRU entries dropped to stay under the budget
  uint64_t invalidations = 0;  // entries dropped because their memory changed (unmap, deregister)
  uint64_t failures = 0;       // registrations refused (budget, errors)
  uint64_t pinned_bytes = 0;   // bytes registered right now
  uint64_t budget_bytes = 0;
  size_t entries = 0;
};

class MrCache {
  struct Entry;

 public:
  static constexpr size_t kPage = 4096;

  /// `monitor`: watches implicit registrations; nullptr trusts the owner to call invalidate()
  /// for every change (tests; memory that is never unmapped): every implicit entry is cached.
  /// The Registrar and the monitor must outlive the cache.
  MrCache(Registrar& registrar, size_t budget_bytes,
          UnmapMonitor* monitor = &UnmapMonitor::instance());
  /// Deregisters everything. Handles must be gone by then (one still held is a bug, logged).
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  /// Keeps one registration alive and un-evicted while held. Must not outlive its cache.
  class Handle {
   public:
    Handle() = default;
    Handle(Handle&& other) noexcept;
    Handle& operator=(Handle&& other) noexcept;
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle();

    uint32_t lkey() const;
    uint32_t rkey() const;
    explicit operator bool() const { return entry_ != nullptr; }
    /// Lets the registration go now.
    void reset();

   private:
    friend class MrCache;
    Handle(MrCache* cache, Entry* entry) : cache_(cache), entry_(entry) {}
    MrCache* cache_ = nullptr;
    Entry* entry_ = nullptr;
  };

  /// A registration covering [addr, addr+bytes). A hit when an entry covers it (a sub-range of
  /// an entry is a hit). On a miss registers the range rounded out to whole 4 KiB pages; when it
  /// overlaps or touches implicit entries, registers their union instead and retires those
  /// (deregistered once no Handle holds them). Evicts least-recently-used unheld implicit entries
  /// until pinned + new <= budget; if it still does not fit, HCOMM_ERR_OUT_OF_MEM (the caller
  /// copies instead). An implicit entry the monitor cannot watch is deregistered when its last
  /// Handle goes. Explicit registrations are looked up first.
  Expected<Handle> acquire(const void* addr, size_t bytes);
  /// A Handle when an explicit registration covers [addr, addr+bytes), else an empty Handle
  /// (never registers; for buffers the cache may not register by itself).
  Expected<Handle> find_explicit(const void* addr, size_t bytes);

  /// Explicit registration (the application's hcomm::register_memory): never evicted, never
  /// retired by the monitor, kept until deregister_explicit(). A range inside one already
  /// registered explicitly is a no-op (counted: each needs its deregister_explicit). Implicit
  /// entries it overlaps are retired, so the memory is registered once. Evicts implicit entries
  /// to make room but is not refused by the budget: the application asked for exactly this.
  Status register_explicit(const void* addr, size_t bytes);
  /// Ends an explicit registration (exact address and size as registered, else
  /// HCOMM_ERR_INVALID_ARG saying so).
  Status deregister_explicit(const void* addr, size_t bytes);
  /// Memory [addr, addr+bytes) changed mapping (unmapped, remapped, madvise'd away): every
  /// overlapping implicit entry is retired (deregistered once unheld); counts invalidations.
  void invalidate(const void* addr, size_t bytes);

  MrCacheStats stats() const;
  /// Evicts unheld implicit entries until the pinned bytes fit `bytes` (as far as they can).
  void set_budget(size_t bytes);

 private:
  struct Entry {
    uintptr_t start = 0;
    uintptr_t end = 0;
    Registrar::Registration reg;
    bool registered = true;  // the Registrar still holds it
    bool is_explicit = false;
    bool cached = true;    // implicit: kept when unheld (watched, or no monitor)
    bool watched = false;  // holds a watch on [start, end)
    bool retired = false;  // out of the index, in retired_ until unheld
    uint32_t holds = 0;
    // Explicit: the (address, bytes) the application registered; a lookup must fall inside
    // one of them, as memory outside them may have been unmapped since.
    std::vector<std::pair<uintptr_t, size_t>> keys;
    std::list<Entry*>::iterator lru;  // implicit entries in the index
  };

  void release(Entry* entry);
  Handle hold_locked(Entry* entry);
  Entry* find_explicit_locked(uintptr_t lo, uintptr_t hi);
  std::unique_ptr<Entry> take_implicit_locked(Entry* entry);
  void deregister_locked(Entry& entry);
  void unwatch_locked(Entry& entry);
  void retire_locked(std::unique_ptr<Entry> entry);
  uint64_t evictable_bytes_locked() const;
  void evict_until_locked(uint64_t pinned_target);

  Registrar& registrar_;
  UnmapMonitor* monitor_;
  int subscription_ = 0;

  // Registrar calls are made with mutex_ held: it keeps a registration and its index entry one
  // step (no two overlapping registrations racing, no invalidation slipping in between), and
  // evicted entries are deregistered before the new one pins, as RLIMIT_MEMLOCK counts both.
  mutable std::mutex mutex_;
  std::map<uintptr_t, std::unique_ptr<Entry>> implicit_;  // disjoint, never touching
  std::vector<std::unique_ptr<Entry>> explicit_;
  std::vector<std::unique_ptr<Entry>> retired_;  // held, out of the index
  std::list<Entry*> lru_;                        // implicit entries, most recent first
  MrCacheStats stats_;
};

}  // namespace hcomm::transport::rdma
