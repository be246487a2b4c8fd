// The extension module hcomm._hcomm: the native half of the Python package (python/hcomm/ is
// the other). It binds the enums, hcomm.Communicator's native class, Work, the
// SharedMemoryChannel's byte-level calls, QoS and the process-wide Scheduler hook. Errors become
// the classes of hcomm/_errors.py (registered at import).
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <hcomm/version.h>
#include <hcomm/hcomm.hpp>

#include "comm.hpp"
#include "errors.hpp"
#include "scheduler.hpp"
#include "stats.hpp"
#include "work.hpp"

namespace py = pybind11;
using namespace hcomm;
using hcomm::python::PyComm;
using hcomm::python::PyWork;

namespace {

py::list ranks_list(const std::vector<RankInfo>& ranks) {
  py::list out;
  for (const RankInfo& r : ranks) {
    py::dict d;
    d["rank"] = r.rank;
    d["host"] = r.host;
    d["host_id"] = r.host_id;
    d["address"] = r.address;
    d["transport"] = r.transport;
    d["primary_transport"] = r.primary_transport;
    d["ring_position"] = r.ring_position;
    d["bytes_sent"] = r.bytes_sent;
    out.append(d);
  }
  return out;
}

/// A channel's native half: whole versions of bytes (hcomm/channel.py adds dtype and shape).
class PyChannel {
 public:
  PyChannel(const std::string& name, size_t size, bool create, double timeout_s) {
    Expected<std::unique_ptr<SharedMemoryChannel>> made = Status();
    {
      py::gil_scoped_release unlocked;
      made = create ? SharedMemoryChannel::create(name, size)
                    : SharedMemoryChannel::open(
                          name, size,
                          std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
    }
    if (!made) python::raise_status(made.status());
    channel_ = std::move(*made);
  }
  void write(py::bytes header, py::buffer data) {
    const std::string head = header;
    py::buffer_info info = data.request();
    const size_t bytes = static_cast<size_t>(info.size * info.itemsize);
    scratch_.resize(head.size() + bytes);
    std::memcpy(scratch_.data(), head.data(), head.size());
    std::memcpy(scratch_.data() + head.size(), info.ptr, bytes);
    Status st;
    {
      py::gil_scoped_release unlocked;
      st = channel_->write(scratch_.data(), scratch_.size());
    }
    if (!st.ok()) python::raise_status(st);
  }
  /// (version, bytes) of the newest version newer than `newer_than`, waiting up to timeout_s.
  py::tuple read(uint64_t newer_than, double timeout_s) {  // (version, bytearray)
    std::vector<std::byte> out;
    Expected<uint64_t> v = Status();
    {
      py::gil_scoped_release unlocked;
      v = channel_->read(out, newer_than,
                         std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
    }
    if (!v) python::raise_status(v.status());
    return py::make_tuple(*v, py::bytearray(reinterpret_cast<const char*>(out.data()), out.size()));
  }
  size_t size() const { return channel_->size(); }
  const std::string& name() const { return channel_->name(); }
  bool is_writer() const { return channel_->is_writer(); }
  void close() {
    py::gil_scoped_release unlocked;
    channel_.reset();
  }

 private:
  std::unique_ptr<SharedMemoryChannel> channel_;
  std::vector<std::byte> scratch_;
};

}  // namespace

PYBIND11_MODULE(_hcomm, m) {
  m.doc() = "hcomm's native extension; use the hcomm package";
  m.attr("__version__") = HCOMM_VERSION_STRING;

  py::enum_<DataType>(m, "DataType")
      .value("int8", DataType::int8)
      .value("uint8", DataType::uint8)
      .value("int32", DataType::int32)
      .value("int64", DataType::int64)
      .value("float16", DataType::float16)
      .value("bfloat16", DataType::bfloat16)
      .value("float32", DataType::float32)
      .value("float64", DataType::float64);
  py::enum_<ReduceOp>(m, "ReduceOp")
      .value("SUM", ReduceOp::sum)
      .value("PRODUCT", ReduceOp::prod)
      .value("MIN", ReduceOp::min)
      .value("MAX", ReduceOp::max)
      .value("AVG", ReduceOp::avg)
      .value("BAND", ReduceOp::band)
      .value("BOR", ReduceOp::bor)
      .value("BXOR", ReduceOp::bxor);
  py::enum_<Compression>(m, "CompressionType")
      .value("NONE", Compression::none)
      .value("FP16", Compression::fp16)
      .value("BF16", Compression::bf16)
      .value("DELTA", Compression::delta)
      .value("ZSTD", Compression::zstd)
      .value("AUTO", Compression::automatic);

  m.def("_set_error_classes", &python::set_error_classes);
  m.def("_parse_compression",
        [](const std::string& text) { return python::compression_arg(py::str(text)); });

  py::class_<PyWork>(m, "Work")
      .def("wait", &PyWork::wait, py::arg("timeout") = py::none(),
           "Waits (seconds; None: the op timeout); returns the result or raises hcomm.Error")
      .def("is_completed", &PyWork::is_completed)
      .def_property_readonly(
          "source", [](const PyWork& w) { return w.work().source(); },
          "A receive from any source: the rank whose message it took, once "
          "matched; -1 before and for other operations")
      .def("exception", &PyWork::exception);

  py::class_<PyComm>(m, "_Comm")
      .def(py::init<const py::dict&>())
      .def_property_readonly("rank", &PyComm::rank)
      .def_property_readonly("size", &PyComm::size)
      .def_property_readonly("closed", &PyComm::closed)
      .def("close", &PyComm::close)
      .def("allreduce", &PyComm::allreduce)
      .def("broadcast", &PyComm::broadcast)
      .def("reduce", &PyComm::reduce)
      .def("allgather", &PyComm::allgather)
      .def("reduce_scatter", &PyComm::reduce_scatter)
      .def("alltoall", &PyComm::alltoall)
      .def("gather", &PyComm::gather)
      .def("scatter", &PyComm::scatter)
      .def("send", &PyComm::send)
      .def("recv", &PyComm::recv)
      .def("barrier", &PyComm::barrier)
      .def("abort", [](PyComm& c, const std::string& reason) { c.comm().abort(reason); })
      .def("set_compression", [](PyComm& c, Compression mode) { c.comm().set_compression(mode); })
      .def("compression", [](PyComm& c) { return c.comm().compression(); })
      .def("compression_for", [](PyComm& c, size_t bytes, DataType dtype,
                                 int peer) { return c.comm().compression_for(bytes, dtype, peer); })
      .def("compression_stats",
           [](PyComm& c) {
             const CompressionStats s = c.comm().compression_stats();
             py::dict d;
             d["frames"] = s.frames;
             d["compressed_frames"] = s.compressed_frames;
             d["payload_bytes"] = s.payload_bytes;
             d["wire_bytes"] = s.wire_bytes;
             return d;
           })
      .def("set_qos",
           [](PyComm& c, int min_rate, int max_rate, int priority) {
             Status st = c.comm().set_qos(QosClass{min_rate, max_rate, priority});
             if (!st.ok()) python::raise_status(st);
           })
      .def("qos",
           [](PyComm& c) {
             const QosClass q = c.comm().qos();
             return py::make_tuple(q.min_rate, q.max_rate, q.priority);
           })
      .def("failover_stats",
           [](PyComm& c) { return python::failover_stats_dict(c.comm().failover_stats()); })
      .def("ranks", [](PyComm& c) { return ranks_list(c.comm().ranks()); })
      .def("lost_peers", [](PyComm& c) { return c.comm().lost_peers(); })
      .def("algorithm_for", [](PyComm& c, const std::string& op,
                               size_t bytes) { return c.comm().algorithm_for(op, bytes); })
      .def("config", [](PyComm& c) {
        const Config& cfg = c.comm().config();
        py::dict d;
        d["rank"] = cfg.rank;
        d["world_size"] = cfg.world_size;
        d["transport"] = cfg.transport;
        d["algo"] = cfg.algo;
        d["compression"] = to_string(c.comm().compression());
        d["comp_threshold"] = cfg.comp_threshold;
        d["error_feedback"] = cfg.comp_error_feedback;
        d["timeout"] = std::chrono::duration<double>(cfg.op_timeout).count();
        return d;
      });

  py::class_<PyChannel>(m, "_Channel")
      .def(py::init<const std::string&, size_t, bool, double>())
      .def("write", &PyChannel::write)
      .def("read", &PyChannel::read)
      .def("close", &PyChannel::close)
      .def_property_readonly("size", &PyChannel::size)
      .def_property_readonly("name", &PyChannel::name)
      .def_property_readonly("is_writer", &PyChannel::is_writer);

  python::bind_scheduler(m);
}
