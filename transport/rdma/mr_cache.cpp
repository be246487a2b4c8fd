#include "transport/rdma/mr_cache.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "core/log.hpp"

namespace hcomm::transport::rdma {
namespace {

constexpr uintptr_t kPageMask = MrCache::kPage - 1;

uintptr_t page_down(uintptr_t a) {
  return a & ~kPageMask;
}
uintptr_t page_up(uintptr_t a) {
  return (a + kPageMask) & ~kPageMask;
}

/// [addr, addr+bytes) as integers, or why it is no range at all.
Status checked_range(const char* what, const void* addr, size_t bytes, uintptr_t* lo,
                     uintptr_t* hi) {
  *lo = reinterpret_cast<uintptr_t>(addr);
  *hi = *lo + bytes;
  if (addr == nullptr || bytes == 0 || *hi < *lo || *hi > UINTPTR_MAX - kPageMask) {
    char text[160];
    std::snprintf(text, sizeof(text), "%s(%p, %zu bytes): not a memory range", what, addr, bytes);
    return Status{HCOMM_ERR_INVALID_ARG, text};
  }
  return {};
}

}  // namespace

// ---- Handle

MrCache::Handle::Handle(Handle&& other) noexcept : cache_(other.cache_), entry_(other.entry_) {
  other.cache_ = nullptr;
  other.entry_ = nullptr;
}

MrCache::Handle& MrCache::Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    cache_ = other.cache_;
    entry_ = other.entry_;
    other.cache_ = nullptr;
    other.entry_ = nullptr;
  }
  return *this;
}

MrCache::Handle::~Handle() {
  reset();
}

void MrCache::Handle::reset() {
  if (entry_ != nullptr) cache_->release(entry_);
  cache_ = nullptr;
  entry_ = nullptr;
}

// The registration is fixed once made, so the keys are read without the lock.
uint32_t MrCache::Handle::lkey() const {
  return entry_ != nullptr ? entry_->reg.lkey : 0;
}
uint32_t MrCache::Handle::rkey() const {
  return entry_ != nullptr ? entry_->reg.rkey : 0;
}

// ---- MrCache

MrCache::MrCache(Registrar& registrar, size_t budget_bytes, UnmapMonitor* monitor)
    : registrar_(registrar), monitor_(monitor) {
  stats_.budget_bytes = budget_bytes;
  if (monitor_ != nullptr) {
    subscription_ = monitor_->subscribe([this](uintptr_t lo, uintptr_t hi) {
      invalidate(reinterpret_cast<const void*>(lo), hi - lo);
    });
  }
}

MrCache::~MrCache() {
  // First, without mutex_: unsubscribe waits for a running listener, which may want mutex_.
  if (monitor_ != nullptr) monitor_->unsubscribe(subscription_);
  std::lock_guard<std::mutex> lock(mutex_);
  size_t held = 0;
  auto finish = [&](Entry& e) {
    if (e.holds > 0) ++held;
    unwatch_locked(e);
    deregister_locked(e);
  };
  for (auto& [start, e] : implicit_) finish(*e);
  for (auto& e : explicit_) finish(*e);
  for (auto& e : retired_) finish(*e);
  if (held > 0) {
    HCOMM_LOG(error, core::log::kNet,
              "registration cache destroyed while %zu registrations are in use (a bug): "
              "deregistered anyway",
              held);
  }
}

Expected<MrCache::Handle> MrCache::acquire(const void* addr, size_t bytes) {
  uintptr_t lo = 0, hi = 0;
  if (Status st = checked_range("acquire", addr, bytes, &lo, &hi); !st.ok()) return st;
  // An unmap that has returned to its caller may not have reached invalidate() yet.
  if (monitor_ != nullptr) monitor_->quiesce();
  std::lock_guard<std::mutex> lock(mutex_);

  if (Entry* e = find_explicit_locked(lo, hi)) {
    ++stats_.hits;
    return hold_locked(e);
  }
  auto it = implicit_.upper_bound(lo);
  if (it != implicit_.begin() && std::prev(it)->second->end >= hi) {
    Entry* e = std::prev(it)->second.get();
    lru_.splice(lru_.begin(), lru_, e->lru);
    ++stats_.hits;
    return hold_locked(e);
  }

  ++stats_.misses;
  uintptr_t ulo = page_down(lo), uhi = page_up(hi);
  // Entries that overlap or touch the pages: the new registration covers their union.
  std::vector<Entry*> merged;
  auto m = implicit_.upper_bound(ulo);
  if (m != implicit_.begin() && std::prev(m)->second->end >= ulo) --m;
  for (; m != implicit_.end() && m->first <= uhi; ++m) merged.push_back(m->second.get());
  for (Entry* e : merged) {
    ulo = std::min(ulo, e->start);
    uhi = std::max(uhi, e->end);
  }
  const uint64_t need = uhi - ulo;
  const uint64_t evictable = evictable_bytes_locked();
  if (stats_.pinned_bytes - evictable + need > stats_.budget_bytes) {
    ++stats_.failures;
    char text[320];
    std::snprintf(text, sizeof(text),
                  "registering %" PRIu64
                  " bytes at %p for RDMA exceeds the pinned-memory budget "
                  "(%" PRIu64 " of %" PRIu64 " bytes pinned, %" PRIu64
                  " of them in use); the buffer is copied instead. Raise HCOMM_RDMA_PIN_BUDGET_MB "
                  "to send it in place",
                  need, reinterpret_cast<void*>(ulo), stats_.pinned_bytes, stats_.budget_bytes,
                  stats_.pinned_bytes - evictable);
    return Status{HCOMM_ERR_OUT_OF_MEM, text};
  }

  // The merged entries keep watching their pages until the union watches them: an unmap of a
  // neighbouring buffer during the registration is then reported, not missed.
  std::vector<std::unique_ptr<Entry>> old;
  for (Entry* e : merged) {
    old.push_back(take_implicit_locked(e));
    if (old.back()->holds == 0) deregister_locked(*old.back());
  }
  evict_until_locked(stats_.budget_bytes - need);
  auto reg = registrar_.register_range(reinterpret_cast<void*>(ulo), need);
  if (!reg.ok()) {
    ++stats_.failures;
    for (auto& o : old) retire_locked(std::move(o));
    return reg.status();
  }
  ++stats_.registrations;
  stats_.pinned_bytes += need;

  auto entry = std::make_unique<Entry>();
  Entry* e = entry.get();
  e->start = ulo;
  e->end = uhi;
  e->reg = reg.value();
  if (monitor_ != nullptr) {
    e->watched = monitor_->watch(reinterpret_cast<void*>(ulo), need);
    e->cached = e->watched;
  }
  for (auto& o : old) retire_locked(std::move(o));
  lru_.push_front(e);
  e->lru = lru_.begin();
  implicit_.emplace(ulo, std::move(entry));
  return hold_locked(e);
}

Expected<MrCache::Handle> MrCache::find_explicit(const void* addr, size_t bytes) {
  uintptr_t lo = 0, hi = 0;
  if (Status st = checked_range("find_explicit", addr, bytes, &lo, &hi); !st.ok()) return st;
  std::lock_guard<std::mutex> lock(mutex_);
  Entry* e = find_explicit_locked(lo, hi);
  if (e == nullptr) return Handle{};
  ++stats_.hits;
  return hold_locked(e);
}

Status MrCache::register_explicit(const void* addr, size_t bytes) {
  uintptr_t lo = 0, hi = 0;
  if (Status st = checked_range("register_memory", addr, bytes, &lo, &hi); !st.ok()) return st;
  std::lock_guard<std::mutex> lock(mutex_);
  if (Entry* e = find_explicit_locked(lo, hi)) {
    e->keys.emplace_back(lo, bytes);
    return {};
  }
  const uintptr_t ulo = page_down(lo), uhi = page_up(hi);
  const uint64_t need = uhi - ulo;
  std::vector<Entry*> overlapped;
  auto m = implicit_.upper_bound(ulo);
  if (m != implicit_.begin() && std::prev(m)->second->end > ulo) --m;
  for (; m != implicit_.end() && m->first < uhi; ++m) overlapped.push_back(m->second.get());
  for (Entry* e : overlapped) retire_locked(take_implicit_locked(e));
  evict_until_locked(stats_.budget_bytes > need ? stats_.budget_bytes - need : 0);

  auto reg = registrar_.register_range(reinterpret_cast<void*>(ulo), need);
  if (!reg.ok()) {
    ++stats_.failures;
    return reg.status();
  }
  ++stats_.registrations;
  stats_.pinned_bytes += need;
  auto entry = std::make_unique<Entry>();
  entry->start = ulo;
  entry->end = uhi;
  entry->reg = reg.value();
  entry->is_explicit = true;
  entry->keys.emplace_back(lo, bytes);
  explicit_.push_back(std::move(entry));
  return {};
}

Status MrCache::deregister_explicit(const void* addr, size_t bytes) {
  const auto lo = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard<std::mutex> lock(mutex_);
  size_t other_size = 0;
  for (size_t i = 0; i < explicit_.size(); ++i) {
    auto& keys = explicit_[i]->keys;
    for (auto k = keys.begin(); k != keys.end(); ++k) {
      if (k->first != lo) continue;
      if (k->second != bytes) {
        other_size = k->second;
        continue;
      }
      keys.erase(k);
      if (keys.empty()) {
        std::unique_ptr<Entry> e = std::move(explicit_[i]);
        explicit_.erase(explicit_.begin() + static_cast<ptrdiff_t>(i));
        ++stats_.invalidations;
        retire_locked(std::move(e));
      }
      return {};
    }
  }
  char text[256];
  if (other_size != 0) {
    std::snprintf(text, sizeof(text),
                  "deregister_memory(%p, %zu bytes): %p was registered with %zu bytes; pass the "
                  "size given to register_memory",
                  addr, bytes, addr, other_size);
  } else {
    std::snprintf(text, sizeof(text),
                  "deregister_memory(%p, %zu bytes): no register_memory call with this address",
                  addr, bytes);
  }
  return Status{HCOMM_ERR_INVALID_ARG, text};
}

void MrCache::invalidate(const void* addr, size_t bytes) {
  if (bytes == 0) return;
  const auto lo = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t hi = lo + bytes < lo ? UINTPTR_MAX : lo + bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Entry*> hit;
  auto m = implicit_.upper_bound(lo);
  if (m != implicit_.begin() && std::prev(m)->second->end > lo) --m;
  for (; m != implicit_.end() && m->first < hi; ++m) hit.push_back(m->second.get());
  for (Entry* e : hit) {
    ++stats_.invalidations;
    retire_locked(take_implicit_locked(e));
  }
}

MrCacheStats MrCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  MrCacheStats s = stats_;
  s.entries = implicit_.size() + explicit_.size();
  return s;
}

void MrCache::set_budget(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.budget_bytes = bytes;
  evict_until_locked(bytes);
}

// ---- internals (mutex_ held)

void MrCache::release(Entry* entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--entry->holds > 0) return;
  if (entry->retired) {
    auto it = std::find_if(retired_.begin(), retired_.end(),
                           [&](const std::unique_ptr<Entry>& e) { return e.get() == entry; });
    deregister_locked(*entry);
    if (it != retired_.end()) retired_.erase(it);
  } else if (!entry->is_explicit && !entry->cached) {
    retire_locked(take_implicit_locked(entry));  // unwatched memory: not kept past its use
  }
}

MrCache::Handle MrCache::hold_locked(Entry* entry) {
  ++entry->holds;
  return Handle(this, entry);
}

MrCache::Entry* MrCache::find_explicit_locked(uintptr_t lo, uintptr_t hi) {
  for (auto& e : explicit_) {
    for (const auto& [key, bytes] : e->keys) {
      if (page_down(key) <= lo && hi <= page_up(key + bytes)) return e.get();
    }
  }
  return nullptr;
}

std::unique_ptr<MrCache::Entry> MrCache::take_implicit_locked(Entry* entry) {
  auto it = implicit_.find(entry->start);
  std::unique_ptr<Entry> owned = std::move(it->second);
  implicit_.erase(it);
  lru_.erase(entry->lru);
  return owned;
}

void MrCache::deregister_locked(Entry& entry) {
  if (!entry.registered) return;
  registrar_.deregister(entry.reg.handle);
  entry.registered = false;
  stats_.pinned_bytes -= entry.end - entry.start;
}

void MrCache::unwatch_locked(Entry& entry) {
  if (!entry.watched) return;
  monitor_->unwatch(reinterpret_cast<void*>(entry.start), entry.end - entry.start);
  entry.watched = false;
}

void MrCache::retire_locked(std::unique_ptr<Entry> entry) {
  // Unwatched at once, held or not: the index no longer serves it, and the union that replaced
  // it (if any) watches the same pages.
  unwatch_locked(*entry);
  if (entry->holds == 0) {
    deregister_locked(*entry);
    return;
  }
  entry->retired = true;
  retired_.push_back(std::move(entry));
}

uint64_t MrCache::evictable_bytes_locked() const {
  uint64_t bytes = 0;
  for (const Entry* e : lru_) {
    if (e->holds == 0) bytes += e->end - e->start;
  }
  return bytes;
}

void MrCache::evict_until_locked(uint64_t pinned_target) {
  auto it = lru_.end();
  while (stats_.pinned_bytes > pinned_target && it != lru_.begin()) {
    --it;
    Entry* e = *it;
    if (e->holds > 0) continue;
    auto after = std::next(it);  // stays valid when `it` is erased
    ++stats_.evictions;
    retire_locked(take_implicit_locked(e));
    it = after;
  }
}

}  // namespace hcomm::transport::rdma
