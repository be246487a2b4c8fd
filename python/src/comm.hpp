// hcomm.Communicator's native half: one hcomm::Communicator and its operations on Python buffers.
// Every call that may wait releases the GIL; blocking operations wait as PyWork::wait does, and
// Ctrl-C during one aborts the communicator (its operations, here and at the peers, fail with
// HCOMM_ERR_ABORTED naming the interrupt) and raises KeyboardInterrupt: the buffers the
// operation used are never written after the call returned.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>

#include <hcomm/communicator.hpp>

#include "buffers.hpp"

namespace hcomm::python {

namespace py = pybind11;

class PyComm {
 public:
  /// Config::from_env(), then `options` (rank, world_size, root_addr, transport, socket_ifname,
  /// algo, compression, comp_threshold, error_feedback, timeout, connect_timeout, qos).
  explicit PyComm(const py::dict& options);
  ~PyComm();
  PyComm(const PyComm&) = delete;
  PyComm& operator=(const PyComm&) = delete;

  int rank() const { return comm().rank(); }
  int size() const { return comm().size(); }
  void close();
  bool closed() const { return comm_ == nullptr; }

  // Operations: `dtype` None or an hcomm.DataType overriding the buffers' own; `async_op`
  // returns a Work. In place where recv is None.
  py::object allreduce(py::object send, py::object recv, ReduceOp op, py::object dtype,
                       bool async_op);
  py::object broadcast(py::object buf, int root, py::object dtype, bool async_op);
  py::object reduce(py::object send, py::object recv, ReduceOp op, int root, py::object dtype,
                    bool async_op);
  py::object allgather(py::object send, py::object recv, py::object dtype, bool async_op);
  py::object reduce_scatter(py::object send, py::object recv, ReduceOp op, py::object dtype,
                            bool async_op);
  py::object alltoall(py::object send, py::object recv, py::object dtype, bool async_op);
  py::object gather(py::object send, py::object recv, int root, py::object dtype, bool async_op);
  py::object scatter(py::object send, py::object recv, int root, py::object dtype, bool async_op);
  py::object send(py::object buf, int peer, int tag, py::object dtype, bool async_op);
  py::object recv(py::object buf, int peer, int tag, py::object dtype, bool async_op);
  py::object barrier(bool async_op);

  Communicator& comm() const;
  const std::shared_ptr<Communicator>& shared() const { return comm_; }

 private:
  /// Hands `work` back: a PyWork when async, else waits (interruptibly) and returns `result`.
  py::object finish(Work work, std::vector<Buffer> buffers, py::object result, bool async_op);

  std::shared_ptr<Communicator> comm_;
};

/// An hcomm.CompressionType, or its HCOMM_COMPRESSION spelling parsed by the library
/// (ValueError naming the accepted ones otherwise).
Compression compression_arg(const py::handle& v);

/// None or an hcomm.DataType, as the optional override Buffer takes.
std::optional<DataType> dtype_arg(py::handle dtype);

}  // namespace hcomm::python
