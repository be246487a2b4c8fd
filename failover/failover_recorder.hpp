// The failover statistics of one communicator (Communicator::failover_stats()): counters and a
// bounded, timestamped event list. Written by the progress engine, read by application threads,
// hence a mutex (events are rare; nothing here is on the data path).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "hcomm/communicator.hpp"

namespace hcomm::failover {

class FailoverRecorder {
 public:
  static constexpr size_t kMaxEvents = 4096;

  /// Records `event` (stamped now) and counts it.
  void record(LinkEvent event);
  void count_replay(uint64_t frames, uint64_t bytes);
  void count_duplicate();
  FailoverStats snapshot() const;

 private:
  mutable std::mutex mutex_;
  FailoverStats stats_;
};

}  // namespace hcomm::failover
