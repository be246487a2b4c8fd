#include "collectives/blocks.hpp"

namespace hcomm::collectives {
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

void send_chunks(Schedule& s, const PlanContext& ctx, size_t esize, int peer, uint32_t step,
                 const std::byte* data, size_t bytes, uint64_t offset, Schedule::Id after) {
  const auto chunks = split_chunks(0, bytes, ctx.chunk_bytes, esize);
  for (size_t c = 0; c < chunks.size(); ++c) {
    auto [off, n] = chunks[c];
    s.order(after, s.send(peer, step, static_cast<uint32_t>(c), data + off, n, offset + off));
  }
}

void recv_chunks(Schedule& s, const PlanContext& ctx, size_t esize, int peer, uint32_t step,
                 std::byte* data, size_t bytes, uint64_t offset, Schedule::Id after) {
  const auto chunks = split_chunks(0, bytes, ctx.chunk_bytes, esize);
  for (size_t c = 0; c < chunks.size(); ++c) {
    auto [off, n] = chunks[c];
    s.order(after, s.recv(peer, step, static_cast<uint32_t>(c), data + off, n, offset + off));
  }
}

}  // namespace hcomm::collectives
