// The rendezvous store as a protocol sees it during creation (transport::Rendezvous): one
// communicator's keys, under its prefix, in the store rank 0 hosts.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>

#include "bootstrap/store_client.hpp"
#include "transport/rendezvous.hpp"

namespace hcomm::bootstrap {

class StoreRendezvous final : public transport::Rendezvous {
 public:
  /// `client` outlives this; `prefix` ("comm/<n>/") is prepended to every key.
  StoreRendezvous(StoreClient& client, std::string prefix)
      : client_(client), prefix_(std::move(prefix)) {}
  Status set(const std::string& key, const std::string& value) override {
    return client_.set(prefix_ + key, value);
  }
  Expected<std::string> get(const std::string& key, Deadline deadline) override {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return client_.get(prefix_ + key, std::max(left, std::chrono::milliseconds(1)));
  }

 private:
  StoreClient& client_;
  std::string prefix_;
};

}  // namespace hcomm::bootstrap
