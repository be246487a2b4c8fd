// Bootstrap: the rendezvous store's keys and values, with the limits that keep a flood of
// requests from growing rank 0 without bound. The server's thread alone uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "hcomm/status.hpp"

namespace hcomm::bootstrap {

struct StoreLimits {
  /// Keys and values together, each key counting kKeyOverhead more (HCOMM_STORE_MAX_BYTES);
  /// so at most max_bytes / kKeyOverhead keys.
  size_t max_bytes = size_t{64} << 20;
  static constexpr size_t kKeyOverhead = 64;
};

class StoreTable {
 public:
  explicit StoreTable(StoreLimits limits) : limits_(limits) {}

  /// Stores `value` under `key`, replacing the old one. HCOMM_ERR_OUT_OF_MEM (nothing changed)
  /// when that would take the table past its limit.
  Status set(const std::string& key, std::string value);
  /// Adds `delta` to the decimal counter at `key` (0 when absent); the new value. Fails with
  /// HCOMM_ERR_INVALID_ARG when the key holds no counter or it would overflow, and like set()
  /// when full.
  Expected<int64_t> add(const std::string& key, int64_t delta);
  /// The value at `key`, or null. Valid until the next set()/add() of that key.
  const std::string* find(const std::string& key) const;
  bool contains(const std::string& key) const { return data_.count(key) != 0; }

  size_t bytes() const { return bytes_; }
  size_t keys() const { return data_.size(); }
  const StoreLimits& limits() const { return limits_; }

 private:
  static size_t cost(const std::string& key, const std::string& value) {
    return key.size() + value.size() + StoreLimits::kKeyOverhead;
  }
  StoreLimits limits_;
  std::unordered_map<std::string, std::string> data_;
  size_t bytes_ = 0;
};

}  // namespace hcomm::bootstrap
