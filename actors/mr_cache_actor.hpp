// The mr_cache actors (actors/messages.hpp): one per RDMA device the process opened, spawned in
// the Runtime when a communicator opens the device. The application's registrations
// (hcomm::register_memory) go through them to every device's cache, and are kept for devices
// opened later, which apply them when their actor starts.
#pragma once

#include <cstddef>

#include "hcomm/memory.hpp"
#include "hcomm/status.hpp"

namespace hcomm::actors {

class Runtime;

/// Spawns the mr_cache actor of every RDMA device opened in this process that has none yet.
void attach_mr_caches(Runtime& runtime);

/// hcomm::register_memory / deregister_memory / memory_registration_stats, through the actors.
Status register_memory(const void* addr, size_t bytes);
Status deregister_memory(const void* addr, size_t bytes);
MemoryRegistrationStats memory_registration_stats();

}  // namespace hcomm::actors
