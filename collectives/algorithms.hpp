// The algorithms: each turns one operation into a Schedule for this rank. They see only ranks,
// buffers and sizes: transports, actors and threads are not their business.
//
// Every algorithm is correct for any world size (1 and non-powers of two included) and count
// (0 included), in place and out of place. Chunking follows PlanContext::chunk_bytes.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "collectives/operation.hpp"
#include "collectives/schedule.hpp"

namespace hcomm::coll {

struct PlanContext {
  int rank = 0;
  int size = 1;
  size_t chunk_bytes = 512 * 1024;
};

/// [offset, bytes) pieces of a byte range, each at most `chunk_bytes` and a multiple of `elem`.
/// `at_least_one` yields one empty piece for an empty range (point-to-point needs a frame).
std::vector<std::pair<size_t, size_t>> split_chunks(size_t offset, size_t bytes, size_t chunk_bytes,
                                                    size_t elem, bool at_least_one = false);

/// Reduce-scatter then allgather around a ring; each segment pipelined in chunks. Bandwidth
/// optimal (2(n-1)/n of the data crosses each link); results are bit-identical on every rank.
struct RingAllreduce {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// n-1 ring steps; block i of the result comes from rank i.
struct RingAllgather {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// n-1 ring steps of partial sums; rank i ends with block i reduced over all ranks.
struct RingReduceScatter {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// A pipelined chain from the root: each rank forwards chunk k while receiving chunk k+1.
struct ChainBroadcast {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// ceil(log2 n) rounds of empty messages to rank + 2^k (Hensgen et al.'s dissemination barrier).
struct DisseminationBarrier {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// send / recv, chunked so that a large message does not hold a connection alone.
struct PointToPoint {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};

/// Picks the algorithm for `op` and builds its schedule.
Schedule plan(const Operation& op, const PlanContext& ctx);

}  // namespace hcomm::coll
