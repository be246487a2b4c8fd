// collectives/: what an operation is, how algorithms turn it into a schedule of steps, and the
// executor that runs schedules over links. Algorithms never see sockets or actors.
//
// This file: the description of one user operation, shared by the API thread that creates it,
// the communicator actor that numbers and plans it, and the progress engine that runs it.
#pragma once

#include <algorithm>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/completion.hpp"
#include "hcomm/config.hpp"
#include "hcomm/status.hpp"
#include "hcomm/types.hpp"

namespace hcomm::collectives {

enum class OpKind : uint8_t {
  allreduce = 1,
  broadcast = 2,
  allgather = 3,
  reduce_scatter = 4,
  barrier = 5,
  send = 6,
  recv = 7,
  reduce = 8,
  allgatherv = 9,
  alltoall = 10,
  alltoallv = 11,
  gather = 12,
  scatter = 13,
};
constexpr int kNumOpKinds = 14;  ///< OpKind values are below this

/// The algorithm families; which ones an operation supports is in algorithms.hpp.
enum class Algorithm : uint8_t {
  automatic = 0,  ///< chosen by the AlgorithmSelector's cost model
  ring,           ///< ring / pipelined chain: bandwidth optimal for large messages
  tree,           ///< double binary tree, pipelined (NCCL's): log depth, full bandwidth
  rd,             ///< recursive doubling (binomial tree for rooted operations): fewest rounds
  hd,             ///< recursive halving-doubling (Rabenseifner): mid sizes
  direct,         ///< every rank exchanges with every other rank at once
  hier,           ///< hierarchical: within hosts, then among one leader per host, then back
};
constexpr int kNumAlgorithms = 7;
const char* algorithm_name(Algorithm a);
/// "ring", "tree", ... or "auto"; false when `name` is none of them.
bool parse_algorithm(const char* name, Algorithm& out);

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
  /// Elements: the buffer for allreduce / broadcast / reduce; per rank for allgather, gather and
  /// scatter; received for reduce_scatter; per peer block for alltoall. Unused by the V forms.
  size_t count = 0;
  int root = -1;  ///< broadcast, reduce, gather, scatter
  int peer = -1;  ///< send / recv
  int tag = 0;    ///< send / recv
  /// Collectives: the communicator's operation number (1, 2, ...). Point-to-point: a key that the
  /// sender and receiver derive alike (see CommunicatorActor).
  uint64_t seq = 0;
  /// In elements. allgatherv: recv_counts / recv_displs (rank i's block). alltoallv: all four
  /// (send_*[i]: what goes to rank i, recv_*[i]: what comes from rank i).
  std::vector<size_t> send_counts, send_displs, recv_counts, recv_displs;
  /// Set before planning: the algorithm and pipelining chunk this operation runs with.
  Algorithm algo = Algorithm::automatic;
  /// Set at submission: how this operation's payloads travel (the communicator's mode or a
  /// CompressionScope's). The FrameCodec applies it frame by frame.
  Compression compression = Compression::none;
  /// Set at submission (FrameCodec::round_inputs): the allreduce runs in place on its inputs
  /// rounded with error feedback, so its own buffers may be rounded in place.
  bool inputs_rounded = false;
  /// Non-OK: the arguments were rejected; the operation fails at once, and a collective tells the
  /// other ranks so that their matching operation fails too instead of waiting.
  Status invalid;
  std::shared_ptr<core::Completion> completion = std::make_shared<core::Completion>();

  /// Bytes of the application's send and receive buffers on a communicator of `world_size`
  /// ranks (0 where this rank does not use one), so links can register them whole.
  std::pair<size_t, size_t> buffer_bytes(int world_size) const {
    const size_t es = dtype_size(dtype);
    const size_t n = static_cast<size_t>(world_size);
    auto extent = [&](const std::vector<size_t>& counts, const std::vector<size_t>& displs) {
      size_t end = 0;
      for (size_t i = 0; i < counts.size() && i < displs.size(); ++i)
        end = std::max(end, displs[i] + counts[i]);
      return end * es;
    };
    switch (kind) {
      case OpKind::allgather:
      case OpKind::gather:
        return {count * es, count * es * n};
      case OpKind::reduce_scatter:
      case OpKind::scatter:
        return {count * es * n, count * es};
      case OpKind::alltoall:
        return {count * es * n, count * es * n};
      case OpKind::allgatherv:
        return {count * es, extent(recv_counts, recv_displs)};
      case OpKind::alltoallv:
        return {extent(send_counts, send_displs), extent(recv_counts, recv_displs)};
      case OpKind::barrier:
        return {0, 0};
      default:
        return {count * es, count * es};
    }
  }

  /// The size every rank must agree on, in bytes (carried by each frame).
  /// allgatherv: the total; alltoallv: 0, as ranks share no total (each frame's length is
  /// checked against the receiver's count instead).
  uint64_t agreed_bytes() const {
    if (kind == OpKind::allgatherv) {
      uint64_t total = 0;
      for (size_t c : recv_counts) total += c;
      return total * dtype_size(dtype);
    }
    if (kind == OpKind::alltoallv) return 0;
    return count * dtype_size(dtype);
  }
};

using OperationPtr = std::shared_ptr<Operation>;

}  // namespace hcomm::collectives
