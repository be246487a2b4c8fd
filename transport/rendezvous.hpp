// The rendezvous as a protocol sees it while a communicator is being created: a key-value store
// every rank of the communicator shares (keys are private to the communicator). Protocols that
// exchange more than their address (RDMA queue pair numbers) use it in LinkProtocol::prepare().
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "hcomm/status.hpp"

namespace hcomm::transport {

class Rendezvous {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  virtual Status set(const std::string& key, const std::string& value) = 0;
  /// Waits for `key` until `deadline`.
  virtual Expected<std::string> get(const std::string& key, Deadline deadline) = 0;

 protected:
  ~Rendezvous() = default;
};

}  // namespace hcomm::transport
