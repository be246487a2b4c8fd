// hcomm public API: memory registration for RDMA (hcomm_reg_mem in the articles hcomm follows).
//
// A NIC reads and writes only registered (pinned) memory. hcomm registers an application buffer
// that starts on a 4 KiB boundary the first time it sends from it, and caches the registration
// (HCOMM_RDMA_BUFFERS=zero_copy, the default); any other buffer is copied through hcomm's own
// registered staging memory. register_memory() makes a buffer zero-copy whatever its alignment,
// and keeps it registered until deregister_memory().
//
// Invalidation contract: memory registered with register_memory() must be deregistered before
// it is freed or unmapped. Memory hcomm registered by itself needs nothing: hcomm watches those
// ranges (userfaultfd) and drops a registration when its pages are unmapped or given back; where
// it cannot watch a range it does not keep the registration past the operation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hcomm/status.hpp"

namespace hcomm {

/// Registers [ptr, ptr + bytes) with every RDMA device this process uses, now and later.
/// HCOMM_ERR_MMAP names `ulimit -l` when the locked-memory limit refuses it.
HCOMM_API Status register_memory(const void* ptr, size_t bytes);
/// Ends a registration made with register_memory() (same pointer and size).
HCOMM_API Status deregister_memory(const void* ptr, size_t bytes);

/// The registration caches of this process' RDMA devices, summed.
struct MemoryRegistrationStats {
  uint64_t hits = 0;           ///< sends whose buffer was registered already
  uint64_t misses = 0;         ///< sends that registered their buffer first
  uint64_t evictions = 0;      ///< registrations dropped for the pinned-memory budget
  uint64_t invalidations = 0;  ///< registrations dropped because their memory went away
  uint64_t pinned_bytes = 0;   ///< registered now
  uint64_t entries = 0;
  /// hits / (hits + misses); 0 when nothing was looked up.
  double hit_rate() const {
    return hits + misses == 0 ? 0.0
                              : static_cast<double>(hits) / static_cast<double>(hits + misses);
  }
};
HCOMM_API MemoryRegistrationStats memory_registration_stats();

}  // namespace hcomm
