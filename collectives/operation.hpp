// collectives/: what an operation is, how algorithms turn it into a schedule of steps, and the
// executor that runs schedules over links. Algorithms never see sockets or actors.
//
// This file: the description of one user operation, shared by the API thread that creates it,
// the communicator actor that numbers and plans it, and the progress engine that runs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "api/completion.hpp"
#include "hcomm/status.hpp"
#include "hcomm/types.hpp"

namespace hcomm::coll {

enum class OpKind : uint8_t {
  allreduce = 1,
  broadcast = 2,
  allgather = 3,
  reduce_scatter = 4,
  barrier = 5,
  send = 6,
  recv = 7,
};

const char* op_kind_name(OpKind kind);
inline bool is_collective(OpKind k) {
  return k != OpKind::send && k != OpKind::recv;
}

struct Operation {
  OpKind kind = OpKind::barrier;
  DataType dtype = DataType::uint8;
  ReduceOp redop = ReduceOp::sum;
  const std::byte* send = nullptr;
  std::byte* recv = nullptr;
  size_t count = 0;  ///< elements: per rank for allgather, received for reduce_scatter
  int root = -1;     ///< broadcast
  int peer = -1;     ///< send / recv
  int tag = 0;       ///< send / recv
  /// Collectives: the communicator's operation number (1, 2, ...). Point-to-point: a key that the
  /// sender and receiver derive alike (see CommunicatorActor).
  uint64_t seq = 0;
  /// Non-OK: the arguments were rejected; the operation fails at once, and a collective tells the
  /// other ranks so that their matching operation fails too instead of waiting.
  Status invalid;
  std::shared_ptr<detail::Completion> completion = std::make_shared<detail::Completion>();

  /// The size every rank must agree on, in bytes (carried by each frame).
  uint64_t agreed_bytes() const { return count * dtype_size(dtype); }
};

using OperationPtr = std::shared_ptr<Operation>;

}  // namespace hcomm::coll
