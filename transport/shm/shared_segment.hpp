// transport/shm/: shared memory between processes of one host.
//
// This file: a named POSIX shared-memory segment (/dev/shm), mapped; the one place that calls
// shm_open / ftruncate / mmap, and turns their failures into errors that say what to do.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "hcomm/status.hpp"

namespace hcomm::transport::shm {

class SharedSegment {
 public:
  /// Creates `name` (a POSIX shm name without the leading '/') exclusively, sized and mapped.
  /// HCOMM_ERR_INVALID_ARG with `exists` set when it already exists.
  static Expected<SharedSegment> create(const std::string& name, size_t bytes, bool* exists);
  /// Maps an existing segment whole; HCOMM_ERR_INVALID_ARG with `missing` set when absent.
  static Expected<SharedSegment> open(const std::string& name, bool* missing);
  /// Removes the name (mappings stay valid). False when it was already gone.
  static bool unlink(const std::string& name);

  SharedSegment() = default;
  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  ~SharedSegment();

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  /// Maps the pages of [offset, offset + bytes) into this process now, so that its first use of
  /// each costs no page fault on a collective's path.
  void prefault(size_t offset, size_t bytes) const;

 private:
  SharedSegment(void* data, size_t bytes) : data_(data), bytes_(bytes) {}
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

/// A process, told apart from a later one that reuses its pid by its start time.
struct ProcessIdentity {
  int pid = 0;
  uint64_t start_ticks = 0;
  /// How often peers on shared memory look whether each other still runs (alive() reads
  /// /proc): a dead peer is reported within this, at a few /proc reads per second.
  static constexpr std::chrono::milliseconds kCheckPeriod{100};

  static ProcessIdentity self();
  /// Whether that very process still runs.
  bool alive() const;
};

}  // namespace hcomm::transport::shm
