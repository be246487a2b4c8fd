#include "collectives/blocks.hpp"

namespace hcomm::coll {
namespace {

Block block_of(const Operation& op, int i, const std::vector<size_t>& counts,
               const std::vector<size_t>& displs) {
  const size_t esize = dtype_size(op.dtype), ui = static_cast<size_t>(i);
  if (op.kind == OpKind::allgatherv || op.kind == OpKind::alltoallv)
    return {displs[ui] * esize, counts[ui] * esize};
  return {ui * op.count * esize, op.count * esize};
}

}  // namespace

Block recv_block(const Operation& op, int i) {
  return block_of(op, i, op.recv_counts, op.recv_displs);
}

Block send_block(const Operation& op, int i) {
  return block_of(op, i, op.send_counts, op.send_displs);
}

std::byte* reduce_scatter_result(const Operation& op, int rank) {
  return op.send == op.recv ? op.recv + send_block(op, rank).offset : op.recv;
}

}  // namespace hcomm::coll
