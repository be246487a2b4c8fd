#include "failover/failover_recorder.hpp"

namespace hcomm::failover {

void FailoverRecorder::record(LinkEvent event) {
  event.when = std::chrono::system_clock::now();
  std::function<void(const LinkEvent&)> listener;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    listener = listener_;
    switch (event.kind) {
      case LinkEvent::Kind::failover:
        ++stats_.failovers;
        break;
      case LinkEvent::Kind::failback:
        ++stats_.failbacks;
        break;
      case LinkEvent::Kind::reconnect_attempt:
        ++stats_.reconnect_attempts;
        break;
      case LinkEvent::Kind::reconnected:
        ++stats_.reconnects;
        break;
      case LinkEvent::Kind::peer_lost:
        ++stats_.peers_lost;
        break;
      case LinkEvent::Kind::link_down:
      case LinkEvent::Kind::pinned:
        break;
    }
    if (stats_.events.size() == kMaxEvents) stats_.events.erase(stats_.events.begin());
    stats_.events.push_back(event);
  }
  if (listener) listener(event);
}

void FailoverRecorder::set_listener(std::function<void(const LinkEvent&)> listener) {
  std::lock_guard<std::mutex> lock(mutex_);
  listener_ = std::move(listener);
}

void FailoverRecorder::count_replay(uint64_t frames, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.frames_replayed += frames;
  stats_.bytes_replayed += bytes;
}

void FailoverRecorder::count_duplicate() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.duplicates_dropped;
}

void FailoverRecorder::count_gray() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.gray_failures;
}

void FailoverRecorder::count_probe(bool passed) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.probe_rounds;
  if (passed) ++stats_.probes_passed;
}

void FailoverRecorder::publish_links(int peer, const std::array<LinkHealthInfo, 2>& links) {
  std::lock_guard<std::mutex> lock(mutex_);
  links_[peer] = links;
}

FailoverStats FailoverRecorder::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  FailoverStats s = stats_;
  for (const auto& [peer, two] : links_) s.links.insert(s.links.end(), two.begin(), two.end());
  return s;
}

}  // namespace hcomm::failover

namespace hcomm {

const char* link_event_name(LinkEvent::Kind kind) {
  switch (kind) {
    case LinkEvent::Kind::failover:
      return "failover";
    case LinkEvent::Kind::failback:
      return "failback";
    case LinkEvent::Kind::link_down:
      return "link_down";
    case LinkEvent::Kind::reconnect_attempt:
      return "reconnect_attempt";
    case LinkEvent::Kind::reconnected:
      return "reconnected";
    case LinkEvent::Kind::pinned:
      return "pinned";
    case LinkEvent::Kind::peer_lost:
      return "peer_lost";
  }
  return "?";
}

}  // namespace hcomm
