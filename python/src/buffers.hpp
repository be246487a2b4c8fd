// What the Python package passes to hcomm as a buffer: anything with the buffer protocol (numpy
// arrays, bytearray, memoryview) or a torch CPU tensor (duck-typed: data_ptr(), numel(), dtype),
// resolved to a pointer, an element count and an hcomm data type.
//
// Ownership: a Buffer holds a reference to its object (and the buffer-protocol view) until it is
// released, with the GIL held; an operation keeps its buffers for as long as it runs.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <optional>

#include <hcomm/types.hpp>

namespace hcomm::python {

namespace py = pybind11;

class Buffer {
 public:
  /// `obj` as a buffer; `writable`: the operation writes it. `dtype` overrides the type the
  /// object says (hcomm.bfloat16 on a numpy uint16 view). Raises TypeError / ValueError with
  /// what to do for an object that is no buffer, not contiguous, read-only or of a type hcomm
  /// does not reduce.
  Buffer(py::handle obj, bool writable, std::optional<DataType> dtype);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&&) = delete;
  Buffer(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * dtype_size(dtype_); }
  DataType dtype() const { return dtype_; }
  py::object object() const { return obj_; }

 private:
  py::object obj_;
  Py_buffer view_{};
  bool has_view_ = false;
  void* data_ = nullptr;
  size_t count_ = 0;
  DataType dtype_ = DataType::uint8;
};

/// The hcomm type of a buffer-protocol format string ("f", "<d", "e", "B", ...), if any.
std::optional<DataType> dtype_of_format(const char* format, Py_ssize_t itemsize);

}  // namespace hcomm::python
