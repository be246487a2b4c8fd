#include "observe/op_record.hpp"

#include <algorithm>

#include "observe/time_base.hpp"

namespace hcomm::observe {

const char* op_state_name(OpState s) {
  switch (s) {
    case OpState::enqueued:
      return "enqueued";
    case OpState::started:
      return "started";
    case OpState::completed:
      return "completed";
    case OpState::failed:
      return "failed";
  }
  return "unknown";
}

void OpRecord::stamp_ns() {
  if (enqueued_raw == 0) return;
  enqueued_ns = started_ns = TimeBase::get().to_ns(enqueued_raw);
  enqueued_raw = 0;
}

bool OpRecord::finalize() {
  if (finished()) return true;
  if (!completion || !completion->done()) return false;
  stamp_ns();
  // An operation may end before it was recorded (stamped after the hand-off): it took no time.
  completed_ns = std::max(enqueued_ns, steady_ns(completion->completed_at()));
  const Status& st = completion->status();
  state = st.ok() ? OpState::completed : OpState::failed;
  if (!st.ok()) {
    failure = st.to_string();
    failure_code = static_cast<int>(st.code());
  }
  completion.reset();
  return true;
}

OpRecord make_record(const collectives::Operation& op) {
  OpRecord r;
  r.seq = op.seq;
  r.kind = op.kind;
  r.dtype = op.dtype;
  r.redop = op.redop;
  r.algo = op.algo;
  r.compression = op.compression;
  r.root = op.root;
  r.peer = op.peer;
  r.tag = collectives::is_collective(op.kind) ? -1 : op.tag;
  r.count = op.count;
  for (size_t c : op.kind == collectives::OpKind::alltoallv ? op.send_counts : op.recv_counts)
    if (op.kind == collectives::OpKind::allgatherv || op.kind == collectives::OpKind::alltoallv)
      r.count += c;
  r.bytes = op.agreed_bytes();
  if (op.kind == collectives::OpKind::alltoallv) r.bytes = r.count * dtype_size(op.dtype);
  r.state = OpState::started;
  r.completion = op.completion;
  return r;
}

}  // namespace hcomm::observe
