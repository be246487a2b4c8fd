// hcomm.Scheduler in Python over hcomm::Scheduler (hcomm/qos.hpp): when frames of several QoS
// classes may be sent, the order in which their communicators take turns. The Python object's
// schedule(tasks) runs on hcomm's progress thread with the GIL taken, only when two or more tasks
// compete (with none set, or one task, no Python runs).
#pragma once

#include <pybind11/pybind11.h>

namespace hcomm::python {

/// Binds hcomm._hcomm.Task and _set_scheduler(obj or None).
void bind_scheduler(pybind11::module_& m);

}  // namespace hcomm::python
