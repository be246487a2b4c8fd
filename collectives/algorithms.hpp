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

namespace hcomm::collectives {

struct PlanContext {
  int rank = 0;
  int size = 1;
  size_t chunk_bytes = 512 * 1024;
  /// The order of ranks around rings and chains (topology-aware: ranks of a host, switch and rack
  /// next to each other, so a ring crosses each boundary once); null: 0, 1, ..., size-1. Not
  /// owned; the same on every rank.
  const std::vector<int>* ring_order = nullptr;
  /// The host of each rank, numbered 0, 1, ... in order of their lowest rank; null: one host.
  /// Not owned; the same on every rank.
  const std::vector<int>* host_of = nullptr;

  /// Where `r` stands in the ring order, and who stands at position `p` (taken modulo size).
  int position_of(int r) const;
  int rank_at(int p) const;
};

/// [offset, bytes) pieces of a byte range, each at most `chunk_bytes` and a multiple of `elem`.
/// `at_least_one` yields one empty piece for an empty range (point-to-point needs a frame).
std::vector<std::pair<size_t, size_t>> split_chunks(size_t offset, size_t bytes, size_t chunk_bytes,
                                                    size_t elem, bool at_least_one = false);

// ---- allreduce (plan() handles count 0 and a single rank; the builders see neither)
/// Reduce-scatter then allgather around a ring; each segment pipelined in chunks. Bandwidth
/// optimal (2(n-1)/n of the data crosses each link); results are bit-identical on every rank.
struct RingAllreduce {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// Two binary trees over the ranks (NCCL's double binary tree), each carrying half the buffer:
/// chunks are reduced up to the root and broadcast back down, pipelined.
struct TreeAllreduce {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// log2(n) rounds exchanging the whole buffer with rank ^ 2^k; non-powers of two fold the extra
/// ranks in first and out last. Fewest rounds: the small-message algorithm.
struct RecursiveDoublingAllreduce {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// Rabenseifner: recursive-halving reduce-scatter, then recursive-doubling allgather (same
/// folding of extra ranks). log rounds and 2(n-1)/n data: mid sizes.
struct HalvingDoublingAllreduce {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};

/// Hierarchical (PlanContext::host_of): reduce within each host to its leader (lowest rank),
/// allreduce among the leaders, broadcast within each host. Only the leaders' allreduce crosses
/// hosts. Each phase is an existing builder over a sub-group: chains and a ring from
/// kRingBytes on, binomial trees and recursive doubling below.
struct HierarchicalAllreduce {
  static constexpr size_t kRingBytes = 64 * 1024;
  /// Buffers of 2 segments or more pipeline through the phases in up to kMaxSegments segments.
  static constexpr size_t kSegmentBytes = size_t{2} << 20;
  static constexpr size_t kMaxSegments = 32;
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);

 private:
  /// One segment's three phases; its first steps wait for `after`. Returns the segment's first
  /// phase (the next segment's phase 1 waits for it).
  static Schedule::Id build_segment(const Operation& op, const PlanContext& ctx, Schedule& s,
                                    uint32_t segment, Schedule::Id after);
};

// ---- broadcast
/// A pipelined chain from the root: each rank forwards chunk k while receiving chunk k+1.
struct ChainBroadcast {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// Double binary tree rooted at the root, each tree carrying half the buffer, pipelined.
struct TreeBroadcast {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// Binomial tree: log2(n) rounds, the whole buffer per message.
struct BinomialBroadcast {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// Hierarchical (PlanContext::host_of): the root sends to one leader per other host (the root
/// leads its own host, the lowest rank the others) down a tree of the leaders, and each leader
/// down a tree of its host's ranks; chunks pipeline through both. Chains from kRingBytes on,
/// binomial trees below. Each host other than the root's receives the buffer once.
struct HierarchicalBroadcast {
  static constexpr size_t kRingBytes = HierarchicalAllreduce::kRingBytes;
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};

// ---- reduce (result on the root only)
/// A pipelined chain ending at the root, each rank adding its contribution to the passing chunk.
struct ChainReduce {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// Double binary tree toward the root, each tree carrying half the buffer, pipelined.
struct TreeReduce {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// Binomial tree: log2(n) rounds, the whole buffer per message.
struct BinomialReduce {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};

// ---- allgather and allgatherv
/// n-1 ring steps; block i of the result comes from rank i.
struct RingAllgather {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// Every rank sends its block to every other rank at once: one round, for small blocks.
struct DirectAllgather {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// Hierarchical (PlanContext::host_of): each host gathers its blocks to its leader (lowest rank),
/// the leaders exchange their hosts' blocks (a ring of leaders from kRingBytes of gathered
/// buffer on, all at once below), and each leader passes every block down a tree of its host
/// (chain / binomial) as soon as it has it. Each host receives every other host's blocks once.
struct HierarchicalAllgather {
  static constexpr size_t kRingBytes = HierarchicalAllreduce::kRingBytes;
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};

// ---- reduce-scatter
/// n-1 ring steps of partial sums; rank i ends with block i reduced over all ranks.
struct RingReduceScatter {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// Every rank sends block i to rank i at once; each rank reduces what arrives: one round.
struct DirectReduceScatter {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};

// ---- alltoall(v), gather, scatter
/// Pairwise exchange: step k sends to rank + k and receives from rank - k, all posted at once.
struct DirectAlltoall {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// The root receives every block directly.
struct DirectGather {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// The root sends every block directly.
struct DirectScatter {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};

// ---- barrier and point-to-point
/// ceil(log2 n) rounds of empty messages to rank + 2^k (Hensgen et al.'s dissemination barrier).
struct DisseminationBarrier {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};
/// send / recv, chunked so that a large message does not hold a connection alone.
struct PointToPoint {
  static void build(const Operation& op, const PlanContext& ctx, Schedule& s);
};

/// Whether `algo` implements `kind` (automatic: always true).
bool supports(OpKind kind, Algorithm algo);
/// The algorithm used when nothing is chosen (and the only one for barrier and send/recv).
Algorithm default_algorithm(OpKind kind);
/// Builds the schedule of `op` with `op.algo` (automatic: default_algorithm), which must be
/// supported.
Schedule plan(const Operation& op, const PlanContext& ctx);

}  // namespace hcomm::collectives
