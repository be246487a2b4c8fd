// Point-to-point send and receive. A message travels in chunks so that one large message does not
// monopolise a connection; an empty message still sends one frame, so a size mismatch with the
// receiver is detected rather than waited out.
#include "collectives/algorithms.hpp"

namespace hcomm::collectives {

void PointToPoint::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t esize = dtype_size(op.dtype);
  const auto chunks = split_chunks(0, op.count * esize, ctx.chunk_bytes, esize, true);
  for (size_t c = 0; c < chunks.size(); ++c) {
    auto [off, bytes] = chunks[c];
    if (op.kind == OpKind::send)
      s.send(op.peer, 0, static_cast<uint32_t>(c), op.send + off, bytes, off);
    else
      s.recv(op.peer, 0, static_cast<uint32_t>(c), op.recv + off, bytes, off);
  }
}

}  // namespace hcomm::collectives
