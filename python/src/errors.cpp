#include "errors.hpp"

namespace hcomm::python {
namespace {

py::object& base_class() {
  static py::object* base = new py::object();  // lives as long as the interpreter
  return *base;
}

py::dict& classes() {
  static py::dict* by_code = new py::dict();
  return *by_code;
}

py::object class_for(int code) {
  py::int_ key(code);
  if (classes().contains(key)) return classes()[key];
  if (base_class()) return base_class();
  return py::reinterpret_borrow<py::object>(PyExc_RuntimeError);
}

}  // namespace

py::object exception_for(const Status& st) {
  const py::object cls = class_for(static_cast<int>(st.code()));
  py::object e = cls(st.message());
  try {
    e.attr("code") = py::int_(static_cast<int>(st.code()));
  } catch (const py::error_already_set&) {
  }
  return e;
}

void raise_status(const Status& st) {
  const py::object e = exception_for(st);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(e.ptr())), e.ptr());
  throw py::error_already_set();
}

void set_error_classes(py::object base, py::dict by_code) {
  base_class() = std::move(base);
  classes() = std::move(by_code);
}

}  // namespace hcomm::python
