#include "hcomm/memory.hpp"

#include "actors/mr_cache_actor.hpp"

namespace hcomm {

Status register_memory(const void* ptr, size_t bytes) {
  return actors::register_memory(ptr, bytes);
}

Status deregister_memory(const void* ptr, size_t bytes) {
  return actors::deregister_memory(ptr, bytes);
}

MemoryRegistrationStats memory_registration_stats() {
  return actors::memory_registration_stats();
}

}  // namespace hcomm
