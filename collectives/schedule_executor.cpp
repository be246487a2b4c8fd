#include "collectives/schedule_executor.hpp"

#include <cstring>
#include <tuple>

#include "collectives/decode_reduce.hpp"
#include "collectives/reduce_kernels.hpp"
#include "core/log.hpp"

namespace hcomm::collectives {

struct ScheduleExecutor::SendIo final : transport::SendRequest {
  ScheduleExecutor* exec = nullptr;
  Run* run = nullptr;
  uint32_t step = 0;
  std::vector<std::byte> wire;  // the encoded payload, when the frame is compressed
  void on_sent(const Status& status) override;
};

struct ScheduleExecutor::RecvIo final : transport::RecvRequest {
  ScheduleExecutor* exec = nullptr;
  Run* run = nullptr;
  uint32_t step = 0;
  bool rejected = false;  // accept() found a mismatch: this rank tells the others
  FrameCodec::Incoming in;
  Status accept(const transport::FrameHeader& header) override;
  void* destination() override;
  void on_piece(size_t offset, const void* data, size_t bytes) override;
  size_t piece_granularity() const override;
  size_t expected_bytes() const override;
  void on_received(const Status& status) override;
};

struct ScheduleExecutor::Run {
  uint64_t id = 0;
  OperationPtr op;
  Schedule schedule;
  std::vector<uint32_t> waits;
  size_t remaining = 0;  // steps not completed
  size_t in_flight = 0;  // requests a link holds
  bool failed = false;
  Status failure;
  std::deque<SendIo> sends;
  std::deque<RecvIo> recvs;
  std::vector<std::pair<int, RecvIo*>> posted;  // for withdrawal on failure
  size_t send_bytes = 0;  // the application's buffers (Operation::buffer_bytes), for the links
  size_t recv_bytes = 0;
  /// By step: when its send or receive was posted (only with a transfer observer).
  std::vector<std::chrono::steady_clock::time_point> posted_at;
};

namespace {

std::string op_label(const Operation& op) {
  std::string s = std::string(op_kind_name(op.kind)) + " #" +
                  std::to_string(is_collective(op.kind) ? op.seq : (op.seq & 0xffffffffu));
  return s;
}

}  // namespace

ScheduleExecutor::ScheduleExecutor(uint32_t comm_id, int rank, int size)
    : comm_id_(comm_id), rank_(rank), size_(size), links_(static_cast<size_t>(size), nullptr) {}

ScheduleExecutor::~ScheduleExecutor() {
  fail_all({HCOMM_ERR_ABORTED, "the communicator was destroyed while the operation was running"});
}

void ScheduleExecutor::set_link(int peer, transport::Link* link) {
  links_[static_cast<size_t>(peer)] = link;
}

void ScheduleExecutor::start(OperationPtr op, Schedule schedule) {
  auto run = std::make_unique<Run>();
  Run& r = *run;
  r.op = std::move(op);
  r.schedule = std::move(schedule);
  r.remaining = r.schedule.steps().size();
  std::tie(r.send_bytes, r.recv_bytes) = r.op->buffer_bytes(size_);
  for (const auto& st : r.schedule.steps()) r.waits.push_back(st.waits);
  if (transfer_observer_) r.posted_at.resize(r.schedule.steps().size());
  const uint64_t seq = r.op->seq;
  if (r.op->kind == OpKind::recv) unexpected_.erase({r.op->peer, seq});
  r.id = next_run_id_++;
  runs_[r.id] = std::move(run);
  if (activity_ != nullptr) activity_->fetch_add(1);
  ++depth_;
  const std::string* aborted_reason = nullptr;
  if (is_collective(r.op->kind)) {
    if (auto it = aborted_.find(seq); it != aborted_.end()) aborted_reason = &it->second;
  } else if (auto it = aborted_p2p_.find({r.op->peer, seq}); it != aborted_p2p_.end()) {
    aborted_reason = &it->second;
  }
  const int lost = first_lost(r);
  if (!r.op->invalid.ok()) {
    fail(r, r.op->invalid, true);
  } else if (!abort_all_.ok()) {
    fail(r, abort_all_, false);
  } else if (lost >= 0) {
    fail(r, lost_.at(lost), false);
  } else if (aborted_reason != nullptr) {
    fail(r, {HCOMM_ERR_INVALID_ARG, *aborted_reason}, false);
  } else {
    for (uint32_t i = 0; i < r.schedule.steps().size(); ++i)
      if (r.waits[i] == 0) ready_.emplace_back(&r, i);
    maybe_finish(r);  // an empty schedule completes at once
  }
  --depth_;
  drain();
}

void ScheduleExecutor::drain() {
  if (depth_ > 0) return;  // the outermost caller drains
  ++depth_;
  while (!ready_.empty()) {
    auto [run, step] = ready_.front();
    ready_.pop_front();
    if (!run->failed) execute(*run, step);
  }
  --depth_;
  finished_.clear();
}

void ScheduleExecutor::execute(Run& run, uint32_t i) {
  Step& st = run.schedule.steps()[i];
  HCOMM_LOG(trace, core::log::kColl, "%s step %u: kind %d peer %d tag %u/%u, %zu bytes",
            op_label(*run.op).c_str(), i, static_cast<int>(st.kind), st.peer, st.tag_step,
            st.tag_chunk, st.bytes);
  switch (st.kind) {
    case Step::Kind::copy:
      if (st.dst != st.src) std::memmove(st.dst, st.src, st.bytes);
      return step_done(run, i);
    case Step::Kind::average:
      finalize_average(st.dst, st.bytes / dtype_size(run.op->dtype), run.op->dtype, size_);
      // Under fp16/bf16 a value computed here must equal what peers get of it.
      round_to(forced_codec(run.op->compression), st.dst, st.bytes / dtype_size(run.op->dtype),
               run.op->dtype);
      return step_done(run, i);
    case Step::Kind::send: {
      if (transfer_observer_) run.posted_at[i] = std::chrono::steady_clock::now();
      SendIo& io = run.sends.emplace_back();
      io.exec = this;
      io.run = &run;
      io.step = i;
      auto& h = io.header;
      h.kind = static_cast<uint8_t>(transport::FrameKind::data);
      h.op_kind = static_cast<uint8_t>(run.op->kind == OpKind::recv ? OpKind::send : run.op->kind);
      h.dtype = static_cast<uint8_t>(run.op->dtype);
      h.redop = static_cast<uint8_t>(run.op->redop);
      h.comm_id = comm_id_;
      h.op_seq = run.op->seq;
      h.step = st.tag_step;
      h.chunk = st.tag_chunk;
      h.offset = st.offset;
      h.length = st.bytes;
      h.op_bytes = run.op->agreed_bytes();
      io.payload = codec_.encode(*run.op, st, run.op->send, run.send_bytes, h, io.wire);
      // The application buffer the payload lies in (none: hcomm's scratch memory).
      auto inside = [&](const std::byte* base, size_t bytes) {
        return base != nullptr && st.src >= base && st.src + st.bytes <= base + bytes;
      };
      if (!io.wire.empty()) {
        // hcomm's own memory
      } else if (inside(run.op->send, run.send_bytes)) {
        io.buffer = run.op->send;
        io.buffer_bytes = run.send_bytes;
      } else if (inside(run.op->recv, run.recv_bytes)) {
        io.buffer = run.op->recv;
        io.buffer_bytes = run.recv_bytes;
      }
      ++run.in_flight;
      links_[static_cast<size_t>(st.peer)]->post_send(&io);
      return;
    }
    case Step::Kind::recv:
    case Step::Kind::recv_reduce: {
      if (transfer_observer_) run.posted_at[i] = std::chrono::steady_clock::now();
      RecvIo& io = run.recvs.emplace_back();
      io.exec = this;
      io.run = &run;
      io.step = i;
      io.key = {comm_id_, run.op->seq, st.tag_step, st.tag_chunk};
      ++run.in_flight;
      run.posted.emplace_back(st.peer, &io);
      links_[static_cast<size_t>(st.peer)]->post_recv(&io);
      return;
    }
  }
}

void ScheduleExecutor::step_done(Run& run, uint32_t i) {
  --run.remaining;
  for (uint32_t next : run.schedule.steps()[i].then)
    if (--run.waits[next] == 0) ready_.emplace_back(&run, next);
  maybe_finish(run);
}

void ScheduleExecutor::io_done(Run& run, uint32_t step, const Status& status, bool tell) {
  --run.in_flight;
  if (transfer_observer_ && status.ok() && step < run.posted_at.size()) {
    const Step& st = run.schedule.steps()[step];
    TransferEvent e;
    e.seq = run.op->seq;
    e.kind = run.op->kind;
    e.send = st.kind == Step::Kind::send;
    e.peer = st.peer;
    e.step = st.tag_step;
    e.chunk = st.tag_chunk;
    e.bytes = st.bytes;
    e.start = run.posted_at[step];
    e.end = std::chrono::steady_clock::now();
    transfer_observer_(e);
  }
  ++depth_;
  if (run.failed) {
    maybe_finish(run);
  } else if (!status.ok()) {
    fail(run, status, tell);
  } else {
    step_done(run, step);
  }
  --depth_;
  drain();
}

void ScheduleExecutor::SendIo::on_sent(const Status& status) {
  exec->io_done(*run, step, status, false);
}

Status ScheduleExecutor::RecvIo::accept(const transport::FrameHeader& h) {
  const Operation& op = *run->op;
  const Step& st = run->schedule.steps()[step];
  const OpKind mine = op.kind == OpKind::recv ? OpKind::send : op.kind;
  const std::string who = "rank " + std::to_string(h.src_rank);
  std::string what;
  const bool encoded = (h.flags & transport::kFrameCodecMask) != 0;
  in = FrameCodec::Incoming();
  if (h.op_kind != static_cast<uint8_t>(mine)) {
    what = who + " called " + op_kind_name(static_cast<OpKind>(h.op_kind)) + " where this rank (" +
           std::to_string(exec->rank_) + ") called " + op_kind_name(op.kind) +
           ": every rank must call the same collectives in the same order";
  } else if (h.dtype != static_cast<uint8_t>(op.dtype)) {
    what = who + " passed data type " + dtype_name(static_cast<DataType>(h.dtype)) +
           ", this rank " + dtype_name(op.dtype) + ", to " + op_label(op);
  } else if (h.op_bytes != op.agreed_bytes()) {
    what = who + " passed " + std::to_string(h.op_bytes) + " bytes to " + op_label(op) +
           ", this rank (" + std::to_string(exec->rank_) + ") " +
           std::to_string(op.agreed_bytes()) + " bytes: every rank must pass the same count";
  } else if (!encoded && h.length != st.bytes) {
    // Ranks agree on the total but not on this piece: the V forms' per-pair counts.
    what = who + " sent " + std::to_string(h.length) + " bytes in " + op_label(op) +
           " where this rank (" + std::to_string(exec->rank_) + ") expects " +
           std::to_string(st.bytes) + ": " + who +
           "'s send count for this rank must equal this rank's receive count from it";
  } else if (st.kind == Step::Kind::recv_reduce && h.redop != static_cast<uint8_t>(op.redop)) {
    what = who + " reduces with " + reduce_op_name(static_cast<ReduceOp>(h.redop)) +
           ", this rank with " + reduce_op_name(op.redop) + ", in " + op_label(op);
  }
  if (what.empty() && encoded) {
    Status codec_status = exec->codec_.accept(op, st, h, in);
    if (!codec_status.ok()) what = codec_status.message();
  }
  if (what.empty()) return {};
  rejected = true;
  return {HCOMM_ERR_INVALID_ARG, what};
}

void* ScheduleExecutor::RecvIo::destination() {
  const Step& st = run->schedule.steps()[step];
  if (in.codec != compression::Codec::none) return exec->codec_.destination(st, in);
  return st.kind == Step::Kind::recv ? st.dst : nullptr;
}

void ScheduleExecutor::RecvIo::on_piece(size_t offset, const void* data, size_t bytes) {
  const Step& st = run->schedule.steps()[step];
  if (in.codec != compression::Codec::none)
    return exec->codec_.on_piece(*run->op, st, in, offset, data, bytes);
  const size_t esize = dtype_size(run->op->dtype);
  // A piece may start anywhere in a medium's buffer (after headers and odd-sized payloads); the
  // kernels read whole elements, which C++ requires aligned: such a piece is copied first.
  if (reinterpret_cast<uintptr_t>(data) % esize != 0) {
    exec->aligned_piece_.resize((bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t));
    std::memcpy(exec->aligned_piece_.data(), data, bytes);
    data = exec->aligned_piece_.data();
  }
  const compression::Codec lossy = forced_codec(run->op->compression);
  if (compression::is_lossy(lossy) && compression::applies_to(lossy, run->op->dtype))
    return reduce_rounded(lossy, st.dst + offset, st.src + offset, data, bytes / esize,
                          run->op->dtype, run->op->redop);
  reduce(st.dst + offset, st.src + offset, data, bytes / esize, run->op->dtype, run->op->redop);
}

size_t ScheduleExecutor::RecvIo::expected_bytes() const {
  return run->schedule.steps()[step].bytes;
}

size_t ScheduleExecutor::RecvIo::piece_granularity() const {
  if (in.codec != compression::Codec::none) return exec->codec_.piece_granularity(*run->op, in);
  return dtype_size(run->op->dtype);
}

void ScheduleExecutor::RecvIo::on_received(const Status& status) {
  // A received frame is done with its posting; forget it so a failure does not withdraw it.
  for (auto& p : run->posted)
    if (p.second == this) p.second = nullptr;
  Status result = status;
  bool tell = rejected;
  if (result.ok() && in.codec != compression::Codec::none && !run->failed) {
    result = exec->codec_.finish(*run->op, run->schedule.steps()[step], in);
    tell = !result.ok();
    in.staging = {};
  }
  exec->io_done(*run, step, result, tell);
}

void ScheduleExecutor::fail(Run& run, const Status& status, bool tell) {
  if (run.failed) return;
  run.failed = true;
  run.failure = status;
  codec_.forget(*run.op, size_);
  HCOMM_LOG(warn, core::log::kColl, "%s failed: %s", op_label(*run.op).c_str(),
            status.to_string().c_str());
  for (auto& [peer, io] : run.posted) {
    if (io != nullptr && links_[static_cast<size_t>(peer)]->cancel_recv(io)) --run.in_flight;
    io = nullptr;
  }
  if (tell) tell_peers(run, status.message());
  maybe_finish(run);
}

void ScheduleExecutor::tell_peers(const Run& run, const std::string& reason) {
  const Operation& op = *run.op;
  std::string text = "rank " + std::to_string(rank_) + " failed " + op_label(op) + ": " + reason;
  if (is_collective(op.kind)) {
    for (auto* link : links_)
      if (link != nullptr) link->send_abort(comm_id_, op.seq, text);
  } else if (op.peer >= 0 && op.peer < size_ && links_[static_cast<size_t>(op.peer)] != nullptr) {
    links_[static_cast<size_t>(op.peer)]->send_abort(comm_id_, op.seq, text);
  }
}

void ScheduleExecutor::maybe_finish(Run& run) {
  bool complete = run.failed ? run.in_flight == 0 : run.remaining == 0;
  if (!complete) return;
  auto it = runs_.find(run.id);
  if (it == runs_.end()) return;
  std::unique_ptr<Run> owned = std::move(it->second);
  runs_.erase(it);
  if (activity_ != nullptr) activity_->fetch_sub(1);
  if (run.failed) {
    if (is_collective(run.op->kind)) aborted_.emplace(run.op->seq, run.failure.message());
    run.op->completion->complete(run.failure);
  } else {
    run.op->completion->complete({});
  }
  finished_.push_back(std::move(owned));  // callbacks of its requests may still be on the stack
}

int ScheduleExecutor::first_lost(const Run& run) const {
  if (lost_.empty()) return -1;
  if (is_collective(run.op->kind)) return lost_.begin()->first;
  return lost_.count(run.op->peer) != 0 ? run.op->peer : -1;
}

void ScheduleExecutor::abort_all(const Status& status) {
  if (abort_all_.ok()) abort_all_ = status;
  fail_running(status);
}

void ScheduleExecutor::fail_running(const Status& status) {
  ++depth_;
  std::vector<Run*> all;
  for (auto& [id, run] : runs_) all.push_back(run.get());
  for (Run* run : all) fail(*run, status, false);
  --depth_;
  drain();
}

void ScheduleExecutor::on_remote_abort(int peer, uint32_t comm_id, uint64_t op_seq,
                                       const std::string& reason) {
  if (comm_id != comm_id_) return;
  if (op_seq == kAbortAll) {
    HCOMM_LOG(warn, core::log::kColl, "rank %d aborted the communicator: %s", peer, reason.c_str());
    return abort_all({HCOMM_ERR_ABORTED,
                      "rank " + std::to_string(peer) + " aborted the communicator: " + reason});
  }
  HCOMM_LOG(info, core::log::kColl, "rank %d aborted operation %llu: %s", peer,
            static_cast<unsigned long long>(op_seq), reason.c_str());
  Run* run = find(peer, op_seq);
  if (run == nullptr) {
    if (op_seq >> 63)
      aborted_p2p_.emplace(std::make_pair(peer, op_seq), reason);
    else
      aborted_.emplace(op_seq, reason);
    return;
  }
  ++depth_;
  fail(*run, {HCOMM_ERR_INVALID_ARG, reason}, false);
  --depth_;
  drain();
}

ScheduleExecutor::Run* ScheduleExecutor::find(int peer, uint64_t op_seq) {
  for (auto& [id, run] : runs_)
    if (run->op->seq == op_seq && (is_collective(run->op->kind) || run->op->peer == peer))
      return run.get();
  return nullptr;
}

bool ScheduleExecutor::should_drop(const transport::FrameHeader& header) {
  if (header.comm_id != comm_id_) return false;
  if (aborted_.count(header.op_seq) != 0) return true;
  // The first frame of a point-to-point message (top bit of op_seq) nobody receives yet.
  if ((header.op_seq >> 63) != 0 && header.step == 0 && header.chunk == 0 &&
      find(header.src_rank, header.op_seq) == nullptr &&
      unexpected_.emplace(std::make_pair(header.src_rank, header.op_seq), arrivals_).second) {
    ++arrivals_;
    if (on_unexpected_) on_unexpected_();
  }
  return false;
}

bool ScheduleExecutor::involves(const Run& run, int peer) const {
  return is_collective(run.op->kind) ? size_ > 1 : run.op->peer == peer;
}

void ScheduleExecutor::on_link_failed(int peer, const Status& status, bool graceful) {
  // A peer that said goodbye delivered everything it was going to send: only the receives it
  // cannot satisfy fail (the link fails them); a peer that vanished fails all it was part of.
  if (graceful) return;
  // A lost peer stays lost: every later collective, and every operation with it, fails at
  // once (a survivor that does not talk to it directly would otherwise wait for the others).
  if (status.code() == HCOMM_ERR_PEER_LOST && lost_.count(peer) == 0) lost_.emplace(peer, status);
  ++depth_;
  std::vector<Run*> hit;
  for (auto& [seq, run] : runs_)
    if (involves(*run, peer)) hit.push_back(run.get());
  for (Run* run : hit) fail(*run, status, false);
  --depth_;
  drain();
}

void ScheduleExecutor::fail_all(const Status& status) {
  ++depth_;
  std::vector<Run*> all;
  for (auto& [seq, run] : runs_) all.push_back(run.get());
  for (Run* run : all) {
    fail(*run, status, false);
    // Links are going away: requests they still hold will never call back.
    run->in_flight = 0;
    maybe_finish(*run);
  }
  --depth_;
  ready_.clear();
  finished_.clear();
}

}  // namespace hcomm::collectives
