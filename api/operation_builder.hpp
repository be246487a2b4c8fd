// Builds the Operation each public call describes, its arguments checked (argument_checks.hpp):
// a rejected one carries the reason in Operation::invalid and is submitted all the same, so that
// its peers fail it too instead of waiting. Counts are in elements, as in the public API.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/operation.hpp"
#include "hcomm/types.hpp"

namespace hcomm::api {

class OperationBuilder {
 public:
  OperationBuilder(int rank, int size) : rank_(rank), size_(size) {}

  collectives::OperationPtr allreduce(const void* send, void* recv, size_t count, DataType dtype,
                                      ReduceOp op) const;
  collectives::OperationPtr broadcast(void* buf, size_t count, DataType dtype, int root) const;
  collectives::OperationPtr reduce(const void* send, void* recv, size_t count, DataType dtype,
                                   ReduceOp op, int root) const;
  collectives::OperationPtr allgather(const void* send, void* recv, size_t count,
                                      DataType dtype) const;
  collectives::OperationPtr allgatherv(const void* send, void* recv,
                                       const std::vector<size_t>& counts,
                                       const std::vector<size_t>& displs, DataType dtype) const;
  collectives::OperationPtr reduce_scatter(const void* send, void* recv, size_t count,
                                           DataType dtype, ReduceOp op) const;
  collectives::OperationPtr alltoall(const void* send, void* recv, size_t count,
                                     DataType dtype) const;
  collectives::OperationPtr alltoallv(const void* send, const std::vector<size_t>& send_counts,
                                      const std::vector<size_t>& send_displs, void* recv,
                                      const std::vector<size_t>& recv_counts,
                                      const std::vector<size_t>& recv_displs, DataType dtype) const;
  collectives::OperationPtr gather(const void* send, void* recv, size_t count, DataType dtype,
                                   int root) const;
  collectives::OperationPtr scatter(const void* send, void* recv, size_t count, DataType dtype,
                                    int root) const;
  collectives::OperationPtr barrier() const;
  /// A send (`buf` is read) or a receive (`buf` is written) of `count` elements with `peer`.
  collectives::OperationPtr point_to_point(collectives::OpKind kind, void* buf, size_t count,
                                           DataType dtype, int peer, int tag) const;

 private:
  const int rank_;
  const int size_;
};

}  // namespace hcomm::api
