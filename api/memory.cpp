#include "hcomm/memory.hpp"

#include "transport/rdma/rdma_device.hpp"

namespace hcomm {

Status register_memory(const void* ptr, size_t bytes) {
  return transport::rdma::register_everywhere(ptr, bytes);
}

Status deregister_memory(const void* ptr, size_t bytes) {
  return transport::rdma::deregister_everywhere(ptr, bytes);
}

MemoryRegistrationStats memory_registration_stats() {
  MemoryRegistrationStats out;
  for (auto& device : transport::rdma::RdmaDevice::opened()) {
    const auto s = device->mr_cache().stats();
    out.hits += s.hits;
    out.misses += s.misses;
    out.evictions += s.evictions;
    out.invalidations += s.invalidations;
    out.pinned_bytes += s.pinned_bytes;
    out.entries += s.entries;
  }
  return out;
}

}  // namespace hcomm
