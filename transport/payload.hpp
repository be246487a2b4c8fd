// A frame payload the transport holds on its own (an unexpected frame waiting for its receive).
// Its bytes are written by recv() right after allocation, so value-initialising them, as a plain
// std::vector would, is a wasted pass over up to a chunk of memory per frame.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace hcomm::transport {

/// std::allocator, except that resize() leaves new elements uninitialised.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

using Payload = std::vector<std::byte, UninitializedAllocator<std::byte>>;

}  // namespace hcomm::transport

namespace hcomm::transport {

/// Recycles payload buffers. A fresh buffer of a chunk's size comes from mmap and costs a page
/// fault per 4 KiB on first touch (and an munmap when freed): on loopback that was an eighth of
/// a large allreduce's time. A few buffers, reused, keep their pages.
class PayloadPool {
 public:
  /// A buffer of `bytes` uninitialised bytes.
  Payload take(size_t bytes) {
    Payload p;
    if (!spare_.empty()) {
      p = std::move(spare_.back());
      spare_.pop_back();
    }
    p.resize(bytes);
    return p;
  }
  void give(Payload p) {
    if (spare_.size() >= kKeep || p.capacity() == 0) return;
    p.clear();
    spare_.push_back(std::move(p));
  }

 private:
  static constexpr size_t kKeep = 8;
  std::vector<Payload> spare_;
};

}  // namespace hcomm::transport
