#include "collectives/algorithms.hpp"

namespace hcomm::coll {

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

Schedule plan(const Operation& op, const PlanContext& ctx) {
  Schedule s;
  switch (op.kind) {
    case OpKind::allreduce:
      RingAllreduce::build(op, ctx, s);
      break;
    case OpKind::allgather:
      RingAllgather::build(op, ctx, s);
      break;
    case OpKind::reduce_scatter:
      RingReduceScatter::build(op, ctx, s);
      break;
    case OpKind::broadcast:
      ChainBroadcast::build(op, ctx, s);
      break;
    case OpKind::barrier:
      DisseminationBarrier::build(op, ctx, s);
      break;
    case OpKind::send:
    case OpKind::recv:
      PointToPoint::build(op, ctx, s);
      break;
  }
  return s;
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
  }
  return "unknown";
}

}  // namespace hcomm::coll
