#include "buffers.hpp"

#include <cstring>
#include <string>

namespace hcomm::python {

std::optional<DataType> dtype_of_format(const char* format, Py_ssize_t itemsize) {
  if (format == nullptr) return DataType::uint8;  // "B" is the default
  const char* f = format;
  if (*f == '<' || *f == '=' || *f == '@' || *f == '!' || *f == '>') {
    if (*f == '>' || *f == '!') return std::nullopt;  // big-endian data
    ++f;
  }
  if (f[0] == '\0' || f[1] != '\0') return std::nullopt;
  switch (f[0]) {
    case 'b':
      return DataType::int8;
    case 'B':
    case 'c':
    case '?':
      return DataType::uint8;
    case 'e':
      return DataType::float16;
    case 'f':
      return DataType::float32;
    case 'd':
      return DataType::float64;
    case 'i':
    case 'l':
    case 'q':
    case 'n':
      if (itemsize == 4) return DataType::int32;
      if (itemsize == 8) return DataType::int64;
      return std::nullopt;
    case 'H':  // numpy's uint16: a bfloat16 view only when the caller says so
    default:
      return std::nullopt;
  }
}

namespace {

/// torch.float32 -> DataType, by the dtype's name ("torch.float32").
std::optional<DataType> torch_dtype(py::handle tensor) {
  const std::string name = py::str(tensor.attr("dtype"));
  if (name == "torch.float32") return DataType::float32;
  if (name == "torch.float64") return DataType::float64;
  if (name == "torch.float16") return DataType::float16;
  if (name == "torch.bfloat16") return DataType::bfloat16;
  if (name == "torch.int8") return DataType::int8;
  if (name == "torch.uint8") return DataType::uint8;
  if (name == "torch.int32") return DataType::int32;
  if (name == "torch.int64") return DataType::int64;
  return std::nullopt;
}

}  // namespace

Buffer::Buffer(py::handle obj, bool writable, std::optional<DataType> dtype)
    : obj_(py::reinterpret_borrow<py::object>(obj)) {
  if (PyObject_CheckBuffer(obj.ptr())) {
    const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj.ptr(), &view_, flags) != 0) {
      PyErr_Clear();
      Py_buffer probe;
      if (PyObject_GetBuffer(obj.ptr(), &probe, PyBUF_STRIDES | PyBUF_FORMAT) == 0) {
        const bool ro = probe.readonly != 0;
        PyBuffer_Release(&probe);
        if (writable && ro)
          throw py::value_error("the output buffer is read-only: pass a writable array");
      } else {
        PyErr_Clear();
      }
      throw py::value_error(
          "the buffer is not contiguous: pass numpy.ascontiguousarray(x) (or x.copy())");
    }
    has_view_ = true;
    data_ = view_.buf;
    const auto own = dtype_of_format(view_.format, view_.itemsize);
    if (dtype) {
      if (static_cast<Py_ssize_t>(dtype_size(*dtype)) != view_.itemsize &&
          !(view_.itemsize == 1 && view_.len % static_cast<Py_ssize_t>(dtype_size(*dtype)) == 0))
        throw py::value_error(std::string("dtype ") + dtype_name(*dtype) +
                              " does not fit a buffer of " + std::to_string(view_.itemsize) +
                              "-byte elements");
      dtype_ = *dtype;
    } else if (own) {
      dtype_ = *own;
    } else {
      throw py::type_error(std::string("hcomm cannot reduce elements of format '") +
                           (view_.format ? view_.format : "B") +
                           "': use int8, uint8, int32, int64, float16, float32, float64, or a "
                           "uint16 view with dtype=hcomm.bfloat16");
    }
    count_ = static_cast<size_t>(view_.len) / dtype_size(dtype_);
    return;
  }
  if (py::hasattr(obj, "data_ptr") && py::hasattr(obj, "is_contiguous")) {  // a torch tensor
    if (py::str(obj.attr("device").attr("type")).cast<std::string>() != "cpu")
      throw py::value_error("hcomm's Python package moves CPU tensors: call .cpu() first");
    if (!obj.attr("is_contiguous")().cast<bool>())
      throw py::value_error("the tensor is not contiguous: pass t.contiguous()");
    const auto own = torch_dtype(obj);
    if (!own && !dtype)
      throw py::type_error("hcomm cannot reduce tensors of " +
                           std::string(py::str(obj.attr("dtype"))));
    dtype_ = dtype ? *dtype : *own;
    data_ = reinterpret_cast<void*>(obj.attr("data_ptr")().cast<uintptr_t>());
    count_ = obj.attr("numel")().cast<size_t>() * obj.attr("element_size")().cast<size_t>() /
             dtype_size(dtype_);
    return;
  }
  throw py::type_error("expected a numpy array, bytearray, memoryview or torch CPU tensor, got " +
                       std::string(py::str(py::type::of(obj).attr("__name__"))));
}

Buffer::Buffer(Buffer&& other) noexcept
    : obj_(std::move(other.obj_)),
      view_(other.view_),
      has_view_(other.has_view_),
      data_(other.data_),
      count_(other.count_),
      dtype_(other.dtype_) {
  other.has_view_ = false;
}

Buffer::~Buffer() {
  if (has_view_) PyBuffer_Release(&view_);
}

}  // namespace hcomm::python
