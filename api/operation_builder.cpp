#include "api/operation_builder.hpp"

#include <climits>
#include <memory>
#include <string>

#include "api/argument_checks.hpp"
#include "hcomm/communicator.hpp"

namespace hcomm::api {
namespace {

collectives::OperationPtr make_op(collectives::OpKind kind, const void* send, void* recv,
                                  size_t count, DataType dtype) {
  auto op = std::make_shared<collectives::Operation>();
  op->kind = kind;
  op->send = static_cast<const std::byte*>(send);
  op->recv = static_cast<std::byte*>(recv);
  op->count = count;
  op->dtype = dtype;
  return op;
}

}  // namespace

collectives::OperationPtr OperationBuilder::allreduce(const void* send, void* recv, size_t count,
                                                      DataType dtype, ReduceOp op) const {
  auto o = make_op(collectives::OpKind::allreduce, send, recv, count, dtype);
  o->redop = op;
  o->invalid = first_failure({check_type("allreduce", dtype), check_op("allreduce", op, dtype),
                              check_buffer("allreduce", "send", send, count, dtype),
                              check_buffer("allreduce", "recv", recv, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr OperationBuilder::broadcast(void* buf, size_t count, DataType dtype,
                                                      int root) const {
  auto o = make_op(collectives::OpKind::broadcast, buf, buf, count, dtype);
  o->root = root;
  o->invalid =
      first_failure({check_rank("broadcast", "root", root, size_), check_type("broadcast", dtype),
                     check_buffer("broadcast", "", buf, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr OperationBuilder::reduce(const void* send, void* recv, size_t count,
                                                   DataType dtype, ReduceOp op, int root) const {
  auto o = make_op(collectives::OpKind::reduce, send, recv, count, dtype);
  o->redop = op;
  o->root = root;
  o->invalid = first_failure(
      {check_rank("reduce", "root", root, size_), check_type("reduce", dtype),
       check_op("reduce", op, dtype), check_buffer("reduce", "send", send, count, dtype),
       root == rank_ ? check_buffer("reduce", "recv (on the root)", recv, count, dtype)
                     : Status{}});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr OperationBuilder::allgather(const void* send, void* recv, size_t count,
                                                      DataType dtype) const {
  auto o = make_op(collectives::OpKind::allgather, send, recv, count, dtype);
  o->invalid = first_failure({check_type("allgather", dtype),
                              check_buffer("allgather", "send", send, count, dtype),
                              check_buffer("allgather", "recv", recv, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr OperationBuilder::allgatherv(const void* send, void* recv,
                                                       const std::vector<size_t>& counts,
                                                       const std::vector<size_t>& displs,
                                                       DataType dtype) const {
  auto o = make_op(collectives::OpKind::allgatherv, send, recv, 0, dtype);
  o->recv_counts = counts;
  o->recv_displs = displs;
  o->invalid = first_failure(
      {check_type("allgatherv", dtype), check_counts("allgatherv", "recv", counts, displs, size_)});
  if (o->invalid.ok()) {
    size_t total = 0;
    for (size_t n : counts) total += n;
    o->invalid = first_failure(
        {check_buffer("allgatherv", "send", send, counts[static_cast<size_t>(rank_)], dtype),
         check_buffer("allgatherv", "recv", recv, total, dtype)});
  }
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr OperationBuilder::reduce_scatter(const void* send, void* recv,
                                                           size_t count, DataType dtype,
                                                           ReduceOp op) const {
  auto o = make_op(collectives::OpKind::reduce_scatter, send, recv, count, dtype);
  o->redop = op;
  o->invalid =
      first_failure({check_type("reduce_scatter", dtype), check_op("reduce_scatter", op, dtype),
                     check_buffer("reduce_scatter", "send", send, count, dtype),
                     check_buffer("reduce_scatter", "recv", recv, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr OperationBuilder::alltoall(const void* send, void* recv, size_t count,
                                                     DataType dtype) const {
  auto o = make_op(collectives::OpKind::alltoall, send, recv, count, dtype);
  o->invalid = first_failure({check_type("alltoall", dtype),
                              check_buffer("alltoall", "send", send, count, dtype),
                              check_buffer("alltoall", "recv", recv, count, dtype)});
  if (o->invalid.ok()) {  // the builder works on the general (v) form
    const size_t n = static_cast<size_t>(size_);
    o->send_counts.assign(n, count);
    o->recv_counts.assign(n, count);
    for (size_t i = 0; i < n; ++i) {
      o->send_displs.push_back(i * count);
      o->recv_displs.push_back(i * count);
    }
  }
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr OperationBuilder::alltoallv(
    const void* send, const std::vector<size_t>& send_counts,
    const std::vector<size_t>& send_displs, void* recv, const std::vector<size_t>& recv_counts,
    const std::vector<size_t>& recv_displs, DataType dtype) const {
  auto o = make_op(collectives::OpKind::alltoallv, send, recv, 0, dtype);
  o->send_counts = send_counts;
  o->send_displs = send_displs;
  o->recv_counts = recv_counts;
  o->recv_displs = recv_displs;
  o->invalid = first_failure({check_type("alltoallv", dtype),
                              check_counts("alltoallv", "send", send_counts, send_displs, size_),
                              check_counts("alltoallv", "recv", recv_counts, recv_displs, size_)});
  if (o->invalid.ok()) {
    size_t sent = 0, received = 0;
    for (size_t n : send_counts) sent += n;
    for (size_t n : recv_counts) received += n;
    o->invalid = first_failure({check_buffer("alltoallv", "send", send, sent, dtype),
                                check_buffer("alltoallv", "recv", recv, received, dtype)});
  }
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr OperationBuilder::gather(const void* send, void* recv, size_t count,
                                                   DataType dtype, int root) const {
  auto o = make_op(collectives::OpKind::gather, send, recv, count, dtype);
  o->root = root;
  o->invalid = first_failure(
      {check_rank("gather", "root", root, size_), check_type("gather", dtype),
       check_buffer("gather", "send", send, count, dtype),
       root == rank_ ? check_buffer("gather", "recv (on the root)", recv, count, dtype)
                     : Status{}});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr OperationBuilder::scatter(const void* send, void* recv, size_t count,
                                                    DataType dtype, int root) const {
  auto o = make_op(collectives::OpKind::scatter, send, recv, count, dtype);
  o->root = root;
  o->invalid = first_failure(
      {check_rank("scatter", "root", root, size_), check_type("scatter", dtype),
       root == rank_ ? check_buffer("scatter", "send (on the root)", send, count, dtype) : Status{},
       check_buffer("scatter", "recv", recv, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr OperationBuilder::point_to_point(collectives::OpKind kind, void* buf,
                                                           size_t count, DataType dtype, int peer,
                                                           int tag) const {
  const bool is_send = kind == collectives::OpKind::send;
  const char* what = is_send ? "send" : "recv";
  auto o = make_op(kind, is_send ? buf : nullptr, is_send ? nullptr : buf, count, dtype);
  o->peer = peer;
  o->tag = tag;
  const bool any_source = !is_send && peer == Communicator::kAnySource;
  o->invalid = any_source ? Status{} : check_rank(what, "peer", peer, size_);
  if (o->invalid.ok() && peer == rank_)
    o->invalid = {HCOMM_ERR_INVALID_ARG, std::string(what) + ": peer " + std::to_string(peer) +
                                             " is this rank; copy the buffer instead"};
  if (o->invalid.ok() && (tag < 0 || tag == INT_MAX))
    o->invalid = {HCOMM_ERR_INVALID_ARG,
                  std::string(what) + ": tag must be in [0, INT_MAX) (INT_MAX is reserved)"};
  if (o->invalid.ok())
    o->invalid =
        first_failure({check_type(what, dtype), check_buffer(what, "", buf, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr OperationBuilder::barrier() const {
  return make_op(collectives::OpKind::barrier, nullptr, nullptr, 0, DataType::uint8);
}

}  // namespace hcomm::api
