// Planning: which algorithms implement which operation, the default choice, and the dispatch
// from (operation kind, algorithm) to the builder of the schedule.
#include <algorithm>
#include <cstring>

#include "collectives/algorithms.hpp"

namespace hcomm::collectives {
namespace {

using Builder = void (*)(const Operation&, const PlanContext&, Schedule&);

/// The builder of `kind` with `algo` (already resolved from automatic); nullptr: unsupported.
/// Barrier and point-to-point have a single algorithm, reached through automatic only.
Builder builder(OpKind kind, Algorithm algo) {
  switch (kind) {
    case OpKind::allreduce:
      switch (algo) {
        case Algorithm::ring:
          return RingAllreduce::build;
        case Algorithm::tree:
          return TreeAllreduce::build;
        case Algorithm::rd:
          return RecursiveDoublingAllreduce::build;
        case Algorithm::hd:
          return HalvingDoublingAllreduce::build;
        case Algorithm::hier:
          return HierarchicalAllreduce::build;
        default:
          return nullptr;
      }
    case OpKind::broadcast:
      switch (algo) {
        case Algorithm::ring:
          return ChainBroadcast::build;
        case Algorithm::tree:
          return TreeBroadcast::build;
        case Algorithm::rd:
          return BinomialBroadcast::build;
        case Algorithm::hier:
          return HierarchicalBroadcast::build;
        default:
          return nullptr;
      }
    case OpKind::reduce:
      switch (algo) {
        case Algorithm::ring:
          return ChainReduce::build;
        case Algorithm::tree:
          return TreeReduce::build;
        case Algorithm::rd:
          return BinomialReduce::build;
        default:
          return nullptr;
      }
    case OpKind::allgather:
    case OpKind::allgatherv:
      return algo == Algorithm::ring     ? RingAllgather::build
             : algo == Algorithm::direct ? DirectAllgather::build
             : algo == Algorithm::hier   ? HierarchicalAllgather::build
                                         : nullptr;
    case OpKind::reduce_scatter:
      return algo == Algorithm::ring     ? RingReduceScatter::build
             : algo == Algorithm::direct ? DirectReduceScatter::build
                                         : nullptr;
    case OpKind::alltoall:
    case OpKind::alltoallv:
      return algo == Algorithm::direct ? DirectAlltoall::build : nullptr;
    case OpKind::gather:
      return algo == Algorithm::direct ? DirectGather::build : nullptr;
    case OpKind::scatter:
      return algo == Algorithm::direct ? DirectScatter::build : nullptr;
    case OpKind::barrier:
      return algo == Algorithm::automatic ? DisseminationBarrier::build : nullptr;
    case OpKind::send:
    case OpKind::recv:
      return algo == Algorithm::automatic ? PointToPoint::build : nullptr;
  }
  return nullptr;
}

}  // namespace

std::vector<std::pair<size_t, size_t>> split_chunks(size_t offset, size_t bytes, size_t chunk_bytes,
                                                    size_t elem, bool at_least_one) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t step = chunk_bytes - chunk_bytes % elem;
  if (step == 0) step = elem;
  for (size_t done = 0; done < bytes; done += step)
    out.emplace_back(offset + done, std::min(step, bytes - done));
  if (out.empty() && at_least_one) out.emplace_back(offset, 0);
  return out;
}

bool supports(OpKind kind, Algorithm algo) {
  return algo == Algorithm::automatic || builder(kind, algo) != nullptr;
}

Algorithm default_algorithm(OpKind kind) {
  switch (kind) {
    case OpKind::allreduce:
    case OpKind::broadcast:
    case OpKind::reduce:
    case OpKind::allgather:
    case OpKind::allgatherv:
    case OpKind::reduce_scatter:
      return Algorithm::ring;
    case OpKind::alltoall:
    case OpKind::alltoallv:
    case OpKind::gather:
    case OpKind::scatter:
      return Algorithm::direct;
    case OpKind::barrier:
    case OpKind::send:
    case OpKind::recv:
      break;
  }
  return Algorithm::automatic;  // the operation's only algorithm
}

int PlanContext::position_of(int r) const {
  if (ring_order == nullptr) return r;
  for (int p = 0; p < size; ++p)
    if ((*ring_order)[static_cast<size_t>(p)] == r) return p;
  return r;
}

int PlanContext::rank_at(int p) const {
  p = ((p % size) + size) % size;
  return ring_order == nullptr ? p : (*ring_order)[static_cast<size_t>(p)];
}

Schedule plan(const Operation& op, const PlanContext& ctx) {
  Schedule s;
  // An allreduce of nothing, or on one rank, is the same for every algorithm: done here once,
  // so the allreduce builders only see count > 0 and two ranks or more.
  if (op.kind == OpKind::allreduce && (op.count == 0 || ctx.size == 1)) {
    if (op.count > 0 && op.send != op.recv) s.copy(op.recv, op.send, op.agreed_bytes());
    return s;
  }
  const Algorithm algo = op.algo == Algorithm::automatic ? default_algorithm(op.kind) : op.algo;
  if (Builder build = builder(op.kind, algo)) build(op, ctx, s);
  return s;
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::automatic:
      return "auto";
    case Algorithm::ring:
      return "ring";
    case Algorithm::tree:
      return "tree";
    case Algorithm::rd:
      return "rd";
    case Algorithm::hd:
      return "hd";
    case Algorithm::direct:
      return "direct";
    case Algorithm::hier:
      return "hier";
  }
  return "unknown";
}

bool parse_algorithm(const char* name, Algorithm& out) {
  if (name == nullptr) return false;
  for (int a = 0; a < kNumAlgorithms; ++a) {
    if (std::strcmp(name, algorithm_name(static_cast<Algorithm>(a))) == 0) {
      out = static_cast<Algorithm>(a);
      return true;
    }
  }
  return false;
}

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::allreduce:
      return "allreduce";
    case OpKind::broadcast:
      return "broadcast";
    case OpKind::allgather:
      return "allgather";
    case OpKind::reduce_scatter:
      return "reduce_scatter";
    case OpKind::barrier:
      return "barrier";
    case OpKind::send:
      return "send";
    case OpKind::recv:
      return "recv";
    case OpKind::reduce:
      return "reduce";
    case OpKind::allgatherv:
      return "allgatherv";
    case OpKind::alltoall:
      return "alltoall";
    case OpKind::alltoallv:
      return "alltoallv";
    case OpKind::gather:
      return "gather";
    case OpKind::scatter:
      return "scatter";
  }
  return "unknown";
}

}  // namespace hcomm::collectives
