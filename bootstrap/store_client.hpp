// Bootstrap: a rank's connection to the rendezvous store (see store_server.hpp for the protocol).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/job_key.hpp"
#include "hcomm/status.hpp"

namespace hcomm::bootstrap {

/// One connection to the store. Every call blocks with a deadline. Not thread-safe: one thread
/// at a time. The first transport failure is cached: every later call returns it.
class StoreClient {
 public:
  /// Connects to host:port, retrying with backoff until `timeout` passes (the root may start after
  /// this rank), then greets the server. Fails with HCOMM_ERR_TIMEOUT when no store answered in
  /// time, HCOMM_ERR_INVALID_ARG when `host` does not resolve, HCOMM_ERR_TRANSPORT when something
  /// that is not an hcomm store (or another version) answered, or the job-key handshake failed
  /// (`key` non-null: this rank proves it holds it and checks the store does; null: none).
  /// `timeout` also bounds how long set() and add() wait for their reply (at least 5 s).
  static Expected<std::unique_ptr<StoreClient>> connect(
      const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
      std::shared_ptr<const core::JobKey> key = nullptr);
  ~StoreClient();

  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  /// Stores `value` (binary-safe, at most 16 MiB) under `key` (1..4096 bytes), replacing any
  /// previous value, and wakes the clients waiting for it.
  Status set(const std::string& key, const std::string& value);

  /// The value of `key`, waiting until some client sets it. HCOMM_ERR_TIMEOUT after `timeout`.
  Expected<std::string> get(const std::string& key, std::chrono::milliseconds timeout);

  /// Waits until every key in `keys` exists. On HCOMM_ERR_TIMEOUT, *missing (when not null) holds
  /// the keys the server still lacked at the deadline; on success it is cleared.
  Status wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout,
              std::vector<std::string>* missing);

  /// Adds `delta` to the counter `key` (0 when absent) atomically; returns the new value.
  /// The counter is stored as decimal text, so get() reads it too.
  Expected<int64_t> add(const std::string& key, int64_t delta);

  /// The offset of the server's steady clock from this process's (server minus local, ns),
  /// from the quickest of `rounds` round trips; *uncertainty_ns (when not null) is half of it.
  Expected<int64_t> clock_offset_ns(int rounds, int64_t* uncertainty_ns);

 private:
  StoreClient(int fd, std::string root, std::chrono::milliseconds io_timeout);

  /// Runs the job-key handshake as the connecting side, by `deadline`.
  Status authenticate(std::shared_ptr<const core::JobKey> key,
                      std::chrono::steady_clock::time_point deadline);
  /// Sends one request frame and reads the reply body into *reply, before `deadline`.
  Status exchange(const std::string& request, std::chrono::steady_clock::time_point deadline,
                  std::string* reply);
  enum class Direction { send, receive };
  /// Sends or receives all `n` bytes at `buf` by `deadline`; a timeout or a broken connection
  /// fails the client (later calls fail at once).
  Status transfer(Direction direction, char* buf, size_t n,
                  std::chrono::steady_clock::time_point deadline);
  /// Caches `st` as the connection's fatal error and returns it.
  Status fail(Status st);

  int fd_ = -1;
  std::string root_;  ///< "host:port", for messages
  std::chrono::milliseconds io_timeout_;
  Status broken_;              ///< first fatal error; every call fails with it once set
  bool key_required_ = false;  ///< the store greeted with a job-key handshake this rank cannot do
};

}  // namespace hcomm::bootstrap
