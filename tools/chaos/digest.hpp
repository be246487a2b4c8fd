// FNV-1a 64 over bytes: the digest of every result of a run, compared between a fault-free run
// and a faulty one (--expect-digest). Chosen for being trivial to recompute anywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hcomm::tools::chaos {

class Fnv1a64 {
 public:
  void add(const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t h = h_;
    for (size_t i = 0; i < bytes; ++i) {
      h ^= p[i];
      h *= 0x100000001b3ULL;
    }
    h_ = h;
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace hcomm::tools::chaos
