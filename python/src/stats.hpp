// Communicator statistics as Python dicts, shared by hcomm._hcomm and hcomm._torch.
#pragma once

#include <pybind11/pybind11.h>

#include <hcomm/hcomm.hpp>

namespace hcomm::python {

/// FailoverStats as a dict: the counters by name, "events" a list of dicts (peer, from, to,
/// reason, detection_ms, when in seconds since the epoch), oldest first. Needs the GIL.
pybind11::dict failover_stats_dict(const FailoverStats& s);

}  // namespace hcomm::python
