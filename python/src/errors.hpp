// hcomm statuses as Python exceptions: hcomm.Error and one subclass per status code
// (hcomm.TimeoutError, hcomm.PeerLostError, ...), defined in hcomm/_errors.py and handed to the
// extension at import (_set_error_classes). Each carries .code and the library's message.
#pragma once

#include <pybind11/pybind11.h>

#include <hcomm/status.hpp>

namespace hcomm::python {

namespace py = pybind11;

/// Sets the Python error for `st` (non-OK) and throws py::error_already_set. GIL held.
[[noreturn]] void raise_status(const Status& st);
/// The exception object for `st` (non-OK), not raised: Work.exception().
py::object exception_for(const Status& st);
/// Registers the classes: `base` (hcomm.Error) and code -> subclass.
void set_error_classes(py::object base, py::dict by_code);

}  // namespace hcomm::python
