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
  d["gray_failures"] = s.gray_failures;
  d["probe_rounds"] = s.probe_rounds;
  d["probes_passed"] = s.probes_passed;
  py::list links;
  for (const LinkHealthInfo& l : s.links) {
    py::dict link;
    link["peer"] = l.peer;
    link["link"] = l.link;
    link["state"] = l.state;
    link["goodput_in_gbps"] = l.goodput_in_gbps;
    link["busy_in_share"] = l.busy_in_share;
    link["healthy_in_gbps"] = l.healthy_in_gbps;
    link["goodput_out_gbps"] = l.goodput_out_gbps;
    link["healthy_out_gbps"] = l.healthy_out_gbps;
    link["probe_gbps"] = l.probe_gbps;
    link["rtt_us"] = l.rtt_us;
    link["min_rtt_us"] = l.min_rtt_us;
    link["medium_rtt_us"] = l.medium_rtt_us;
    link["loss"] = l.loss;
    link["packets_sent"] = l.packets_sent;
    link["retransmits"] = l.retransmits;
    link["errors"] = l.errors;
    link["bytes_in"] = l.bytes_in;
    link["bytes_acked"] = l.bytes_acked;
    links.append(link);
  }
  d["links"] = links;
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
