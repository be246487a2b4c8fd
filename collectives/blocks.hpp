// Where each rank's block lies in the buffers of the block-structured operations (allgather(v),
// gather, scatter, reduce_scatter, alltoall(v)), so that their algorithms share one reading of
// count and of the V forms' counts and displacements.
#pragma once

#include <cstddef>

#include "collectives/algorithms.hpp"
#include "collectives/operation.hpp"
#include "collectives/schedule.hpp"

namespace hcomm::collectives {

/// A byte range within one of the operation's buffers.
struct Block {
  size_t offset = 0;
  size_t bytes = 0;
};

/// The block of op.recv that comes from rank i: allgather(v), gather, alltoall(v).
Block recv_block(const Operation& op, int i);
/// The block of op.send that goes to rank i: scatter, reduce_scatter, alltoall(v).
Block send_block(const Operation& op, int i);
/// Where reduce_scatter puts this rank's result: op.recv, except when in place as send == recv
/// (the API's form), where it is this rank's block of send like in NCCL's form
/// (recv == send + rank * block), so both forms leave it at the same place.
std::byte* reduce_scatter_result(const Operation& op, int rank);

/// `bytes` at `data` as one message to `peer`: chunks of ctx.chunk_bytes keyed (step, 0, 1, ...),
/// started after `after`; `offset` is the block's place in the operation's buffer (for frame
/// headers). The matching recv_chunks on the peer cuts the same bytes alike.
void send_chunks(Schedule& s, const PlanContext& ctx, size_t esize, int peer, uint32_t step,
                 const std::byte* data, size_t bytes, uint64_t offset,
                 Schedule::Id after = Schedule::kNone);
void recv_chunks(Schedule& s, const PlanContext& ctx, size_t esize, int peer, uint32_t step,
                 std::byte* data, size_t bytes, uint64_t offset,
                 Schedule::Id after = Schedule::kNone);

}  // namespace hcomm::collectives
