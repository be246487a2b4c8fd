// The failover statistics of one communicator (Communicator::failover_stats()): counters and a
// bounded, timestamped event list. Written by the progress engine, read by application threads,
// hence a mutex (events are rare; nothing here is on the data path). A listener
// (Communicator::on_link_event) hears of each event as it is recorded.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "hcomm/communicator.hpp"

namespace hcomm::failover {

class FailoverRecorder {
 public:
  static constexpr size_t kMaxEvents = 4096;

  /// Records `event` (stamped now), counts it, then tells the listener on this thread.
  void record(LinkEvent event);
  /// Replaces the listener (nullptr: none). Any thread; an event being delivered while it is
  /// replaced may still reach the old one.
  void set_listener(std::function<void(const LinkEvent&)> listener);
  void count_replay(uint64_t frames, uint64_t bytes);
  void count_duplicate();
  void count_gray();
  void count_probe(bool passed);
  /// The current health figures of `peer`'s two links (replacing the ones before).
  void publish_links(int peer, const std::array<LinkHealthInfo, 2>& links);
  FailoverStats snapshot() const;

 private:
  mutable std::mutex mutex_;
  FailoverStats stats_;
  std::map<int, std::array<LinkHealthInfo, 2>> links_;  // by peer
  std::function<void(const LinkEvent&)> listener_;      // under mutex_
};

}  // namespace hcomm::failover
