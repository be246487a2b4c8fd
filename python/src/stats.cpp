#include "stats.hpp"

#include <chrono>

namespace py = pybind11;

namespace hcomm::python {

py::dict failover_stats_dict(const FailoverStats& s) {
  py::dict d;
  d["failovers"] = s.failovers;
  d["failbacks"] = s.failbacks;
  d["reconnect_attempts"] = s.reconnect_attempts;
  d["reconnects"] = s.reconnects;
  d["peers_lost"] = s.peers_lost;
  d["frames_replayed"] = s.frames_replayed;
  d["bytes_replayed"] = s.bytes_replayed;
  d["duplicates_dropped"] = s.duplicates_dropped;
  py::list events;
  for (const LinkEvent& e : s.events) {
    py::dict ev;
    ev["peer"] = e.peer;
    ev["from"] = e.from;
    ev["to"] = e.to;
    ev["reason"] = e.reason;
    ev["detection_ms"] = e.detection_ms;
    ev["when"] = std::chrono::duration<double>(e.when.time_since_epoch()).count();
    events.append(ev);
  }
  d["events"] = events;
  return d;
}

}  // namespace hcomm::python
