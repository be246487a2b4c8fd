// hcomm public API: a named shared-memory channel between processes of one host, usable without
// a communicator — one writer publishes versions of a buffer, any number of readers read the
// newest one (parameter-server style sharing of weights or configuration).
//
// A read returns one version whole: the writer fills the other half of a double buffer and then
// flips, so a reader never sees half an update. Readers can wait (futex, no polling) for a version
// newer than the one they have. The segment lives in /dev/shm as "hcomm-channel-<name>"; the
// writer removes it when destroyed, and a segment left by a writer that died is reclaimed by the
// next create() of that name.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hcomm/status.hpp"

namespace hcomm {

class HCOMM_API SharedMemoryChannel {
 public:
  /// The writer: creates channel `name` ([A-Za-z0-9._-], at most 200 characters) with room for
  /// `size` bytes per version. Fails with HCOMM_ERR_INVALID_ARG if a live process already writes
  /// it, HCOMM_ERR_OUT_OF_MEM / HCOMM_ERR_MMAP if /dev/shm cannot hold or map it.
  static Expected<std::unique_ptr<SharedMemoryChannel>> create(const std::string& name,
                                                               size_t size);
  /// A reader: opens channel `name`, waiting up to `timeout` for its writer to create it.
  /// `size` must equal the writer's (0 accepts any). A missing channel fails with
  /// HCOMM_ERR_TIMEOUT, a size mismatch with HCOMM_ERR_INVALID_ARG.
  static Expected<std::unique_ptr<SharedMemoryChannel>> open(
      const std::string& name, size_t size = 0,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  /// Writer only: publishes `bytes` (at most size()) from `data` as the next version.
  Status write(const void* data, size_t bytes);
  /// Copies the newest version into `out` (resized to its length) and returns its number
  /// (1, 2, ...), waiting up to `timeout` for one newer than `newer_than`. HCOMM_ERR_TIMEOUT when
  /// none came; HCOMM_ERR_PEER_LOST when the writer closed the channel or died and nothing newer
  /// than `newer_than` will come.
  Expected<uint64_t> read(std::vector<std::byte>& out, uint64_t newer_than = 0,
                          std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  const std::string& name() const;
  size_t size() const;
  bool is_writer() const;

  /// The writer marks the channel closed (readers then get HCOMM_ERR_PEER_LOST) and removes its
  /// name; a reader unmaps. Memory stays valid for readers still mapping it.
  ~SharedMemoryChannel();
  SharedMemoryChannel(const SharedMemoryChannel&) = delete;
  SharedMemoryChannel& operator=(const SharedMemoryChannel&) = delete;

  struct State;

 private:
  explicit SharedMemoryChannel(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace hcomm
