#include "comm.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "work.hpp"

namespace hcomm::python {
namespace {

std::chrono::milliseconds seconds_arg(const py::handle& v, const char* what) {
  const double s = v.cast<double>();
  if (!(s > 0) || s > 2e6)
    throw py::value_error(std::string(what) + " must be a number of seconds in (0, 2e6]");
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000 + 0.5));
}

}  // namespace

Compression compression_arg(const py::handle& v) {
  if (py::isinstance<py::str>(v)) {
    Compression c;
    const std::string text = v.cast<std::string>();
    if (!parse_compression(text.c_str(), &c))
      throw py::value_error("compression '" + text +
                            "' is none of none, fp16, bf16, delta, zstd, auto");
    return c;
  }
  return v.cast<Compression>();
}

namespace {

void apply(const py::dict& options, Config& cfg) {
  for (const auto& [key, value] : options) {
    const std::string k = key.cast<std::string>();
    if (k == "rank")
      cfg.rank = value.cast<int>();
    else if (k == "world_size")
      cfg.world_size = value.cast<int>();
    else if (k == "root_addr")
      cfg.root_addr = value.cast<std::string>();
    else if (k == "transport")
      cfg.transport = value.cast<std::string>();
    else if (k == "socket_ifname")
      cfg.socket_ifname = value.cast<std::string>();
    else if (k == "algo")
      cfg.algo = value.cast<std::string>();
    else if (k == "compression")
      cfg.compression = compression_arg(value);
    else if (k == "comp_threshold")
      cfg.comp_threshold = value.cast<size_t>();
    else if (k == "error_feedback")
      cfg.comp_error_feedback = value.cast<bool>();
    else if (k == "timeout")
      cfg.op_timeout = seconds_arg(value, "timeout");
    else if (k == "connect_timeout")
      cfg.connect_timeout = seconds_arg(value, "connect_timeout");
    else if (k == "qos") {
      auto q = QosClass::parse(value.cast<std::string>());
      if (!q) raise_status(q.status());
      cfg.qos = *q;
    } else {
      throw py::type_error("unknown option '" + k +
                           "': rank, world_size, root_addr, transport, socket_ifname, algo, "
                           "compression, comp_threshold, error_feedback, timeout, "
                           "connect_timeout, qos");
    }
  }
}

void same_type(const Buffer& a, const Buffer& b, const char* op) {
  if (a.dtype() != b.dtype())
    throw py::type_error(std::string(op) + ": the input holds " + dtype_name(a.dtype()) +
                         ", the output " + dtype_name(b.dtype()) + ": pass arrays of one type");
}

void expect_count(const Buffer& b, size_t want, const char* op, const char* which) {
  if (b.count() != want)
    throw py::value_error(std::string(op) + ": the " + which + " holds " +
                          std::to_string(b.count()) + " elements where " + std::to_string(want) +
                          " are needed");
}

}  // namespace

std::optional<DataType> dtype_arg(py::handle dtype) {
  if (dtype.is_none()) return std::nullopt;
  return dtype.cast<DataType>();
}

PyComm::PyComm(const py::dict& options) {
  auto cfg = Config::from_env();
  if (!cfg) raise_status(cfg.status());
  apply(options, *cfg);
  Expected<std::unique_ptr<Communicator>> made = Status();
  {
    py::gil_scoped_release unlocked;
    made = Communicator::create(*cfg);
  }
  if (!made) raise_status(made.status());
  comm_ = std::shared_ptr<Communicator>(std::move(*made));
}

PyComm::~PyComm() {
  close();
}

void PyComm::close() {
  if (!comm_) return;
  reap_orphans();
  std::shared_ptr<Communicator> last = std::move(comm_);
  py::gil_scoped_release unlocked;  // destruction waits for the engine, which may call Python
  last.reset();
}

Communicator& PyComm::comm() const {
  if (!comm_) raise_status({HCOMM_ERR_INVALID_ARG, "the communicator was closed"});
  return *comm_;
}

py::object PyComm::finish(Work work, std::vector<Buffer> buffers, py::object result,
                          bool async_op) {
  reap_orphans();
  if (async_op)
    return py::cast(
        std::make_unique<PyWork>(std::move(work), std::move(buffers), std::move(result), comm_));
  const auto st = wait_interruptible(work, comm().config().op_timeout);
  if (!st) {  // Ctrl-C: abort, let the operation end, then raise KeyboardInterrupt
    comm_->abort("rank " + std::to_string(comm_->rank()) + " was interrupted (KeyboardInterrupt)");
    {
      py::gil_scoped_release unlocked;
      work.wait(std::chrono::seconds(10));
    }
    PyWork keep(std::move(work), std::move(buffers), py::none(), comm_);  // orphaned if need be
    throw py::error_already_set();
  }
  if (!st->ok()) {
    const bool running = !work.test();
    PyWork keep(std::move(work), std::move(buffers), py::none(), comm_);
    if (running)
      raise_status({HCOMM_ERR_TIMEOUT,
                    "the operation did not complete within the communicator's timeout (" +
                        std::to_string(comm().config().op_timeout.count()) +
                        " ms, HCOMM_TIMEOUT_MS); abort the communicator or raise the timeout"});
    raise_status(*st);
  }
  return result;
}

py::object PyComm::allreduce(py::object send, py::object recv, ReduceOp op, py::object dtype,
                             bool async_op) {
  std::vector<Buffer> b;
  b.emplace_back(send, recv.is_none(), dtype_arg(dtype));
  if (!recv.is_none()) {
    b.emplace_back(recv, true, dtype_arg(dtype));
    same_type(b[0], b[1], "all_reduce");
    expect_count(b[1], b[0].count(), "all_reduce", "output");
  }
  const Buffer& out = b.back();
  Work w = comm().allreduce_async(b[0].data(), out.data(), b[0].count(), b[0].dtype(), op);
  py::object result = out.object();
  return finish(std::move(w), std::move(b), std::move(result), async_op);
}

py::object PyComm::broadcast(py::object buf, int root, py::object dtype, bool async_op) {
  std::vector<Buffer> b;
  b.emplace_back(buf, rank() != root, dtype_arg(dtype));
  Work w = comm().broadcast_async(b[0].data(), b[0].count(), b[0].dtype(), root);
  return finish(std::move(w), std::move(b), buf, async_op);
}

py::object PyComm::reduce(py::object send, py::object recv, ReduceOp op, int root, py::object dtype,
                          bool async_op) {
  std::vector<Buffer> b;
  const bool in_place = recv.is_none() && rank() == root;
  b.emplace_back(send, in_place, dtype_arg(dtype));
  void* out = in_place ? b[0].data() : nullptr;
  if (!recv.is_none()) {
    b.emplace_back(recv, true, dtype_arg(dtype));
    same_type(b[0], b[1], "reduce");
    expect_count(b[1], b[0].count(), "reduce", "output");
    out = b[1].data();
  }
  Work w = comm().reduce_async(b[0].data(), out, b[0].count(), b[0].dtype(), op, root);
  py::object result = rank() == root ? b.back().object() : py::none();
  return finish(std::move(w), std::move(b), std::move(result), async_op);
}

py::object PyComm::allgather(py::object send, py::object recv, py::object dtype, bool async_op) {
  std::vector<Buffer> b;
  b.emplace_back(send, false, dtype_arg(dtype));
  b.emplace_back(recv, true, dtype_arg(dtype));
  same_type(b[0], b[1], "all_gather");
  expect_count(b[1], b[0].count() * static_cast<size_t>(size()), "all_gather", "output");
  Work w = comm().allgather_async(b[0].data(), b[1].data(), b[0].count(), b[0].dtype());
  return finish(std::move(w), std::move(b), recv, async_op);
}

py::object PyComm::reduce_scatter(py::object send, py::object recv, ReduceOp op, py::object dtype,
                                  bool async_op) {
  std::vector<Buffer> b;
  b.emplace_back(send, false, dtype_arg(dtype));
  b.emplace_back(recv, true, dtype_arg(dtype));
  same_type(b[0], b[1], "reduce_scatter");
  expect_count(b[0], b[1].count() * static_cast<size_t>(size()), "reduce_scatter", "input");
  Work w = comm().reduce_scatter_async(b[0].data(), b[1].data(), b[1].count(), b[0].dtype(), op);
  return finish(std::move(w), std::move(b), recv, async_op);
}

py::object PyComm::alltoall(py::object send, py::object recv, py::object dtype, bool async_op) {
  std::vector<Buffer> b;
  b.emplace_back(send, false, dtype_arg(dtype));
  b.emplace_back(recv, true, dtype_arg(dtype));
  same_type(b[0], b[1], "all_to_all");
  expect_count(b[1], b[0].count(), "all_to_all", "output");
  if (b[0].count() % static_cast<size_t>(size()) != 0)
    throw py::value_error("all_to_all: " + std::to_string(b[0].count()) +
                          " elements do not split into " + std::to_string(size()) + " blocks");
  Work w = comm().alltoall_async(b[0].data(), b[1].data(), b[0].count() / size(), b[0].dtype());
  return finish(std::move(w), std::move(b), recv, async_op);
}

py::object PyComm::gather(py::object send, py::object recv, int root, py::object dtype,
                          bool async_op) {
  std::vector<Buffer> b;
  b.emplace_back(send, false, dtype_arg(dtype));
  void* out = nullptr;
  if (rank() == root) {
    if (recv.is_none()) throw py::value_error("gather: the root needs an output");
    b.emplace_back(recv, true, dtype_arg(dtype));
    same_type(b[0], b[1], "gather");
    expect_count(b[1], b[0].count() * static_cast<size_t>(size()), "gather", "output");
    out = b[1].data();
  }
  Work w = comm().gather_async(b[0].data(), out, b[0].count(), b[0].dtype(), root);
  py::object result = rank() == root ? recv : py::none();
  return finish(std::move(w), std::move(b), std::move(result), async_op);
}

py::object PyComm::scatter(py::object send, py::object recv, int root, py::object dtype,
                           bool async_op) {
  std::vector<Buffer> b;
  b.emplace_back(recv, true, dtype_arg(dtype));
  const void* in = nullptr;
  if (rank() == root) {
    if (send.is_none()) throw py::value_error("scatter: the root needs an input");
    b.emplace_back(send, false, dtype_arg(dtype));
    same_type(b[1], b[0], "scatter");
    expect_count(b[1], b[0].count() * static_cast<size_t>(size()), "scatter", "input");
    in = b[1].data();
  }
  Work w = comm().scatter_async(in, b[0].data(), b[0].count(), b[0].dtype(), root);
  return finish(std::move(w), std::move(b), recv, async_op);
}

py::object PyComm::send(py::object buf, int peer, int tag, py::object dtype, bool async_op) {
  std::vector<Buffer> b;
  b.emplace_back(buf, false, dtype_arg(dtype));
  Work w = comm().send_async(b[0].data(), b[0].count(), b[0].dtype(), peer, tag);
  return finish(std::move(w), std::move(b), py::none(), async_op);
}

py::object PyComm::recv(py::object buf, int peer, int tag, py::object dtype, bool async_op) {
  std::vector<Buffer> b;
  b.emplace_back(buf, true, dtype_arg(dtype));
  Work w = comm().recv_async(b[0].data(), b[0].count(), b[0].dtype(), peer, tag);
  return finish(std::move(w), std::move(b), buf, async_op);
}

py::object PyComm::barrier(bool async_op) {
  Work w = comm().barrier_async();
  return finish(std::move(w), {}, py::none(), async_op);
}

}  // namespace hcomm::python
