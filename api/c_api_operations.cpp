// The C API's collectives and point-to-point operations (include/hcomm/hcomm.h): each checks its
// C arguments, then calls the C++ form; the blocking forms call the blocking C++ calls, so they
// cost what those do.
#include <climits>
#include <vector>

#include "api/c_api_support.hpp"

using namespace hcomm::api::c;
using hcomm::Communicator;
using hcomm::DataType;
using hcomm::Expected;
using hcomm::ReduceOp;
using hcomm::Status;
using hcomm::Work;

namespace {

/// A data type and a reduce op, both checked.
struct Reduction {
  Status invalid;
  DataType dtype = DataType::uint8;
  ReduceOp op = ReduceOp::sum;
};

Reduction reduction_of(const char* what, const hcomm_datatype_t& dtype, const hcomm_redop_t& op) {
  Reduction r;
  auto t = to_dtype(what, dtype);
  auto o = to_redop(what, op);
  if (!t.ok())
    r.invalid = t.status();
  else if (!o.ok())
    r.invalid = o.status();
  else {
    r.dtype = t.value();
    r.op = o.value();
  }
  return r;
}

/// `n` entries of `array` (one per rank); HCOMM_ERR_INVALID_ARG when `array` is NULL.
Expected<std::vector<size_t>> per_rank(const char* what, const char* name, const size_t* array,
                                       int n) {
  if (array == nullptr)
    return Status{HCOMM_ERR_INVALID_ARG, std::string(what) + ": " + name +
                                             " is NULL (pass an array of one entry per rank)"};
  return std::vector<size_t>(array, array + n);
}

/// The four per-rank arrays of alltoallv, or why one is missing.
struct VCounts {
  Status invalid;
  std::vector<size_t> send_counts, send_displs, recv_counts, recv_displs;
};

VCounts alltoallv_counts(const char* what, int n, const size_t* sc, const size_t* sd,
                         const size_t* rc, const size_t* rd) {
  VCounts v;
  auto a = per_rank(what, "send_counts", sc, n);
  auto b = per_rank(what, "send_displs", sd, n);
  auto c = per_rank(what, "recv_counts", rc, n);
  auto d = per_rank(what, "recv_displs", rd, n);
  for (auto* e : {&a, &b, &c, &d})
    if (!e->ok() && v.invalid.ok()) v.invalid = e->status();
  if (v.invalid.ok()) {
    v.send_counts = std::move(a.value());
    v.send_displs = std::move(b.value());
    v.recv_counts = std::move(c.value());
    v.recv_displs = std::move(d.value());
  }
  return v;
}

/// The batch's operations as C++ ones, or why one is malformed.
Expected<std::vector<hcomm::PointToPointOp>> batch_of(const char* what, const hcomm_p2p_op_t* ops,
                                                      size_t n) {
  if (ops == nullptr && n > 0)
    return Status{HCOMM_ERR_INVALID_ARG,
                  std::string(what) + ": ops is NULL with n = " + std::to_string(n)};
  std::vector<hcomm::PointToPointOp> out;
  for (size_t i = 0; i < n; ++i) {
    const hcomm_p2p_op_t& c = ops[i];
    const int kind = raw_enum(c.kind);
    if (kind != HCOMM_P2P_SEND && kind != HCOMM_P2P_RECV)
      return Status{HCOMM_ERR_INVALID_ARG, std::string(what) + ": ops[" + std::to_string(i) +
                                               "].kind is neither HCOMM_P2P_SEND nor "
                                               "HCOMM_P2P_RECV"};
    auto t = to_dtype(what, c.dtype);
    if (!t.ok()) return t.status();
    hcomm::PointToPointOp p;
    p.kind = kind == HCOMM_P2P_SEND ? hcomm::PointToPointOp::Kind::send
                                    : hcomm::PointToPointOp::Kind::recv;
    p.buf = c.buf;
    p.count = c.count;
    p.dtype = t.value();
    p.peer = c.peer;
    p.tag = c.tag;
    out.push_back(p);
  }
  return out;
}

}  // namespace

extern "C" {

// ---- allreduce, reduce, reduce_scatter

hcomm_status_t hcomm_allreduce(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                               hcomm_datatype_t dtype, hcomm_redop_t op) {
  const char* what = "hcomm_allreduce";
  return blocking(what, comm, [&](Communicator& c) {
    const Reduction r = reduction_of(what, dtype, op);
    return r.invalid.ok() ? c.allreduce(send, recv, count, r.dtype, r.op) : r.invalid;
  });
}

hcomm_status_t hcomm_allreduce_async(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                                     hcomm_datatype_t dtype, hcomm_redop_t op, hcomm_work_t* work) {
  const char* what = "hcomm_allreduce_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    const Reduction r = reduction_of(what, dtype, op);
    if (!r.invalid.ok()) return r.invalid;
    return c.allreduce_async(send, recv, count, r.dtype, r.op);
  });
}

hcomm_status_t hcomm_reduce(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                            hcomm_datatype_t dtype, hcomm_redop_t op, int root) {
  const char* what = "hcomm_reduce";
  return blocking(what, comm, [&](Communicator& c) {
    const Reduction r = reduction_of(what, dtype, op);
    return r.invalid.ok() ? c.reduce(send, recv, count, r.dtype, r.op, root) : r.invalid;
  });
}

hcomm_status_t hcomm_reduce_async(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                                  hcomm_datatype_t dtype, hcomm_redop_t op, int root,
                                  hcomm_work_t* work) {
  const char* what = "hcomm_reduce_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    const Reduction r = reduction_of(what, dtype, op);
    if (!r.invalid.ok()) return r.invalid;
    return c.reduce_async(send, recv, count, r.dtype, r.op, root);
  });
}

hcomm_status_t hcomm_reduce_scatter(hcomm_comm_t comm, const void* send, void* recv,
                                    size_t recv_count, hcomm_datatype_t dtype, hcomm_redop_t op) {
  const char* what = "hcomm_reduce_scatter";
  return blocking(what, comm, [&](Communicator& c) {
    const Reduction r = reduction_of(what, dtype, op);
    return r.invalid.ok() ? c.reduce_scatter(send, recv, recv_count, r.dtype, r.op) : r.invalid;
  });
}

hcomm_status_t hcomm_reduce_scatter_async(hcomm_comm_t comm, const void* send, void* recv,
                                          size_t recv_count, hcomm_datatype_t dtype,
                                          hcomm_redop_t op, hcomm_work_t* work) {
  const char* what = "hcomm_reduce_scatter_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    const Reduction r = reduction_of(what, dtype, op);
    if (!r.invalid.ok()) return r.invalid;
    return c.reduce_scatter_async(send, recv, recv_count, r.dtype, r.op);
  });
}

// ---- broadcast, allgather(v), alltoall(v), gather, scatter, barrier

hcomm_status_t hcomm_broadcast(hcomm_comm_t comm, void* buf, size_t count, hcomm_datatype_t dtype,
                               int root) {
  const char* what = "hcomm_broadcast";
  return blocking(what, comm, [&](Communicator& c) {
    auto t = to_dtype(what, dtype);
    return t.ok() ? c.broadcast(buf, count, t.value(), root) : t.status();
  });
}

hcomm_status_t hcomm_broadcast_async(hcomm_comm_t comm, void* buf, size_t count,
                                     hcomm_datatype_t dtype, int root, hcomm_work_t* work) {
  const char* what = "hcomm_broadcast_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    auto t = to_dtype(what, dtype);
    if (!t.ok()) return t.status();
    return c.broadcast_async(buf, count, t.value(), root);
  });
}

hcomm_status_t hcomm_allgather(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                               hcomm_datatype_t dtype) {
  const char* what = "hcomm_allgather";
  return blocking(what, comm, [&](Communicator& c) {
    auto t = to_dtype(what, dtype);
    return t.ok() ? c.allgather(send, recv, count, t.value()) : t.status();
  });
}

hcomm_status_t hcomm_allgather_async(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                                     hcomm_datatype_t dtype, hcomm_work_t* work) {
  const char* what = "hcomm_allgather_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    auto t = to_dtype(what, dtype);
    if (!t.ok()) return t.status();
    return c.allgather_async(send, recv, count, t.value());
  });
}

hcomm_status_t hcomm_allgatherv(hcomm_comm_t comm, const void* send, void* recv,
                                const size_t* recv_counts, const size_t* recv_displs,
                                hcomm_datatype_t dtype) {
  const char* what = "hcomm_allgatherv";
  return blocking(what, comm, [&](Communicator& c) {
    auto t = to_dtype(what, dtype);
    auto counts = per_rank(what, "recv_counts", recv_counts, c.size());
    auto displs = per_rank(what, "recv_displs", recv_displs, c.size());
    if (!t.ok()) return t.status();
    if (!counts.ok()) return counts.status();
    if (!displs.ok()) return displs.status();
    return c.allgatherv(send, recv, counts.value(), displs.value(), t.value());
  });
}

hcomm_status_t hcomm_allgatherv_async(hcomm_comm_t comm, const void* send, void* recv,
                                      const size_t* recv_counts, const size_t* recv_displs,
                                      hcomm_datatype_t dtype, hcomm_work_t* work) {
  const char* what = "hcomm_allgatherv_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    auto t = to_dtype(what, dtype);
    auto counts = per_rank(what, "recv_counts", recv_counts, c.size());
    auto displs = per_rank(what, "recv_displs", recv_displs, c.size());
    if (!t.ok()) return t.status();
    if (!counts.ok()) return counts.status();
    if (!displs.ok()) return displs.status();
    return c.allgatherv_async(send, recv, counts.value(), displs.value(), t.value());
  });
}

hcomm_status_t hcomm_alltoall(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                              hcomm_datatype_t dtype) {
  const char* what = "hcomm_alltoall";
  return blocking(what, comm, [&](Communicator& c) {
    auto t = to_dtype(what, dtype);
    return t.ok() ? c.alltoall(send, recv, count, t.value()) : t.status();
  });
}

hcomm_status_t hcomm_alltoall_async(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                                    hcomm_datatype_t dtype, hcomm_work_t* work) {
  const char* what = "hcomm_alltoall_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    auto t = to_dtype(what, dtype);
    if (!t.ok()) return t.status();
    return c.alltoall_async(send, recv, count, t.value());
  });
}

hcomm_status_t hcomm_alltoallv(hcomm_comm_t comm, const void* send, const size_t* send_counts,
                               const size_t* send_displs, void* recv, const size_t* recv_counts,
                               const size_t* recv_displs, hcomm_datatype_t dtype) {
  const char* what = "hcomm_alltoallv";
  return blocking(what, comm, [&](Communicator& c) {
    auto t = to_dtype(what, dtype);
    VCounts v =
        alltoallv_counts(what, c.size(), send_counts, send_displs, recv_counts, recv_displs);
    if (!t.ok()) return t.status();
    if (!v.invalid.ok()) return v.invalid;
    return c.alltoallv(send, v.send_counts, v.send_displs, recv, v.recv_counts, v.recv_displs,
                       t.value());
  });
}

hcomm_status_t hcomm_alltoallv_async(hcomm_comm_t comm, const void* send, const size_t* send_counts,
                                     const size_t* send_displs, void* recv,
                                     const size_t* recv_counts, const size_t* recv_displs,
                                     hcomm_datatype_t dtype, hcomm_work_t* work) {
  const char* what = "hcomm_alltoallv_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    auto t = to_dtype(what, dtype);
    VCounts v =
        alltoallv_counts(what, c.size(), send_counts, send_displs, recv_counts, recv_displs);
    if (!t.ok()) return t.status();
    if (!v.invalid.ok()) return v.invalid;
    return c.alltoallv_async(send, v.send_counts, v.send_displs, recv, v.recv_counts, v.recv_displs,
                             t.value());
  });
}

hcomm_status_t hcomm_gather(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                            hcomm_datatype_t dtype, int root) {
  const char* what = "hcomm_gather";
  return blocking(what, comm, [&](Communicator& c) {
    auto t = to_dtype(what, dtype);
    return t.ok() ? c.gather(send, recv, count, t.value(), root) : t.status();
  });
}

hcomm_status_t hcomm_gather_async(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                                  hcomm_datatype_t dtype, int root, hcomm_work_t* work) {
  const char* what = "hcomm_gather_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    auto t = to_dtype(what, dtype);
    if (!t.ok()) return t.status();
    return c.gather_async(send, recv, count, t.value(), root);
  });
}

hcomm_status_t hcomm_scatter(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                             hcomm_datatype_t dtype, int root) {
  const char* what = "hcomm_scatter";
  return blocking(what, comm, [&](Communicator& c) {
    auto t = to_dtype(what, dtype);
    return t.ok() ? c.scatter(send, recv, count, t.value(), root) : t.status();
  });
}

hcomm_status_t hcomm_scatter_async(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                                   hcomm_datatype_t dtype, int root, hcomm_work_t* work) {
  const char* what = "hcomm_scatter_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    auto t = to_dtype(what, dtype);
    if (!t.ok()) return t.status();
    return c.scatter_async(send, recv, count, t.value(), root);
  });
}

hcomm_status_t hcomm_barrier(hcomm_comm_t comm) {
  return blocking("hcomm_barrier", comm, [&](Communicator& c) { return c.barrier(); });
}

hcomm_status_t hcomm_barrier_async(hcomm_comm_t comm, hcomm_work_t* work) {
  return nonblocking("hcomm_barrier_async", comm, work,
                     [&](Communicator& c) -> Expected<Work> { return c.barrier_async(); });
}

// ---- point to point

hcomm_status_t hcomm_send(hcomm_comm_t comm, const void* buf, size_t count, hcomm_datatype_t dtype,
                          int peer, int tag) {
  const char* what = "hcomm_send";
  return blocking(what, comm, [&](Communicator& c) {
    auto t = to_dtype(what, dtype);
    return t.ok() ? c.send(buf, count, t.value(), peer, tag) : t.status();
  });
}

hcomm_status_t hcomm_send_async(hcomm_comm_t comm, const void* buf, size_t count,
                                hcomm_datatype_t dtype, int peer, int tag, hcomm_work_t* work) {
  const char* what = "hcomm_send_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    auto t = to_dtype(what, dtype);
    if (!t.ok()) return t.status();
    return c.send_async(buf, count, t.value(), peer, tag);
  });
}

hcomm_status_t hcomm_recv(hcomm_comm_t comm, void* buf, size_t count, hcomm_datatype_t dtype,
                          int peer, int tag) {
  const char* what = "hcomm_recv";
  return blocking(what, comm, [&](Communicator& c) {
    auto t = to_dtype(what, dtype);
    return t.ok() ? c.recv(buf, count, t.value(), peer, tag) : t.status();
  });
}

hcomm_status_t hcomm_recv_async(hcomm_comm_t comm, void* buf, size_t count, hcomm_datatype_t dtype,
                                int peer, int tag, hcomm_work_t* work) {
  const char* what = "hcomm_recv_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    auto t = to_dtype(what, dtype);
    if (!t.ok()) return t.status();
    return c.recv_async(buf, count, t.value(), peer, tag);
  });
}

hcomm_status_t hcomm_batch(hcomm_comm_t comm, const hcomm_p2p_op_t* ops, size_t n) {
  const char* what = "hcomm_batch";
  return blocking(what, comm, [&](Communicator& c) {
    auto batch = batch_of(what, ops, n);
    return batch.ok() ? c.batch(batch.value()) : batch.status();
  });
}

hcomm_status_t hcomm_batch_async(hcomm_comm_t comm, const hcomm_p2p_op_t* ops, size_t n,
                                 hcomm_work_t* work) {
  const char* what = "hcomm_batch_async";
  return nonblocking(what, comm, work, [&](Communicator& c) -> Expected<Work> {
    auto batch = batch_of(what, ops, n);
    if (!batch.ok()) return batch.status();
    return c.batch_async(batch.value());
  });
}

}  // extern "C"
