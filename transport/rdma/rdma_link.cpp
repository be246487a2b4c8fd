#include "transport/rdma/rdma_link.hpp"

#include <algorithm>
#include <cstring>

#include "core/errno_text.hpp"
#include "core/log.hpp"

namespace hcomm::transport::rdma {

struct RdmaLink::MessageHeader {
  static constexpr uint32_t kMagic = 0x314d4452;  // "RDM1"
  uint32_t seq = 0;
  uint16_t credits = 0;  // receive slots of this queue pair reposted since the last message
  uint8_t credit_only = 0;
  uint8_t starts_frame = 0;  // a FrameHeader follows
  uint32_t body = 0;         // bytes after this header
  uint32_t magic = kMagic;
};

namespace {

constexpr int kRecvSlots = QueuePairSet::kRecvSlots;
constexpr int kSendDepth = QueuePairSet::kSendDepth;
constexpr size_t kMessageHeaderBytes = 16;
constexpr size_t kHeaderArea = 128;  // per send context: message header + frame header
constexpr uint64_t kSendBit = uint64_t{1} << 63;
// Payload per message, a multiple of 64 bytes so pieces keep any element size's granularity.
constexpr size_t kFirstPiece = (RdmaLink::kSlotBytes - kMessageHeaderBytes - 64) / 64 * 64;
constexpr size_t kLaterPiece = (RdmaLink::kSlotBytes - kMessageHeaderBytes) / 64 * 64;
constexpr int kStagingPerRegion = 16;
constexpr int kMaxStaging = 256;  // slots per link when the pool may grow
// Below this a frame is copied into staging even from a registered buffer: one copy of a few KiB
// costs less than the second scatter-gather entry and the cache lookup.
constexpr size_t kZeroCopyMin = 16 * 1024;
constexpr size_t kPage = 4096;

}  // namespace

// ---- creation

RdmaLink::RdmaLink(ProgressEngine& engine, LinkObserver& observer, Identity id,
                   std::unique_ptr<QueuePairSet> qps, RdmaBufferMode buffers, UpCallback on_up)
    : MediumLink(observer, id, qps->name(), std::move(on_up)),
      engine_(engine),
      qps_(std::move(qps)),
      buffers_(buffers),
      incoming_(router(), HoldPolicy{}) {
  next_to_post_ = sendq_.end();
  Status st = allocate();
  if (!st.ok()) {
    fail(st);
    return;
  }
  serving_ = true;
  engine_.add_poller(this);
  engine_.add_fd(qps_->channel()->fd, EPOLLIN, this);
  qps_->device().events().subscribe(engine_, this);
  went_up();
}

Status RdmaLink::allocate() {
  const int nq = qps_->size();
  auto headers = RegisteredRegion::allocate(qps_->device(),
                                            static_cast<size_t>(nq) * kSendDepth * kHeaderArea);
  if (!headers.ok()) return headers.status();
  header_region_ = std::move(headers.value());
  contexts_.resize(static_cast<size_t>(nq) * kSendDepth);
  for (size_t i = 0; i < contexts_.size(); ++i) {
    contexts_[i].header = header_region_.base() + i * kHeaderArea;
    free_contexts_.push_back(static_cast<int>(contexts_.size() - 1 - i));
  }
  credits_.assign(static_cast<size_t>(nq), kRecvSlots);
  owed_.assign(static_cast<size_t>(nq), 0);
  send_queued_.assign(static_cast<size_t>(nq), 0);
  return grow_staging();
}

Status RdmaLink::grow_staging() {
  auto region = RegisteredRegion::allocate(qps_->device(), kStagingPerRegion * kSlotBytes);
  if (!region.ok()) return region.status();
  RegisteredRegion& r = staging_regions_.emplace_back(std::move(region.value()));
  for (int i = 0; i < kStagingPerRegion; ++i) {
    free_staging_.push_back(static_cast<int>(staging_slots_.size()));
    staging_slots_.push_back(r.base() + static_cast<size_t>(i) * kSlotBytes);
    staging_lkeys_.push_back(r.lkey());
  }
  return {};
}

RdmaLink::~RdmaLink() {
  end_quietly({HCOMM_ERR_ABORTED, "the communicator was destroyed"});
  if (serving_) {
    qps_->device().events().unsubscribe(this);
    engine_.remove_poller(this);
    engine_.remove_fd(qps_->channel()->fd);
  }
  sendq_.clear();  // drops registrations (MrCache handles) before the queue pairs go
}

LinkCaps RdmaLink::caps() const {
  LinkCaps c;
  c.medium = "rdma";
  c.max_frame_bytes = SIZE_MAX;  // split into messages of kSlotBytes
  c.one_sided = true;
  c.detects_peer_failure = true;  // completion errors (retry exceeded)
  return c;
}

MediumCounters RdmaLink::delivery_counters() const {
  return qps_->device().port_counters();
}

// ---- sending

void RdmaLink::send_frame(SendRequest* request) {
  Outgoing& o = sendq_.emplace_back();
  o.header = request->header;
  o.payload = static_cast<const std::byte*>(request->payload);
  o.request = request;
  if (next_to_post_ == sendq_.end()) next_to_post_ = std::prev(sendq_.end());
  const bool data = o.header.kind == static_cast<uint8_t>(FrameKind::data);
  if (buffers_ == RdmaBufferMode::zero_copy && data && request->buffer != nullptr &&
      o.header.length >= kZeroCopyMin) {
    MrCache& cache = qps_->device().mr_cache();
    // The 4 KiB rule: a buffer that starts on a page is registered on first use; any other one
    // is sent in place only if the application registered it (hcomm::register_memory).
    auto reg = reinterpret_cast<uintptr_t>(request->buffer) % kPage == 0
                   ? cache.acquire(request->buffer, request->buffer_bytes)
                   : cache.find_explicit(o.payload, o.header.length);
    if (reg.ok() && reg.value()) {
      o.registration = std::move(reg.value());
      o.zero_copy = true;
    }
  }
  pump_sends();
}

int RdmaLink::pick_qp(bool credit_only) {
  const int nq = qps_->size();
  for (int i = 0; i < nq; ++i) {
    const int q = (next_qp_ + i) % nq;
    // One credit stays back for a credit-only message (see the header).
    if (send_queued_[static_cast<size_t>(q)] < kSendDepth &&
        credits_[static_cast<size_t>(q)] >= (credit_only ? 1 : 2)) {
      if (!credit_only) next_qp_ = (q + 1) % nq;
      return q;
    }
  }
  return -1;
}

int RdmaLink::take_staging() {
  if (free_staging_.empty()) {
    const bool may_grow =
        buffers_ != RdmaBufferMode::fixed && static_cast<int>(staging_slots_.size()) < kMaxStaging;
    if (!may_grow) return -1;
    Status st = grow_staging();
    if (!st.ok()) {
      HCOMM_LOG(warn, core::log::kNet, "%s: cannot grow the staging pool: %s", describe().c_str(),
                st.to_string().c_str());
      return -1;
    }
  }
  const int s = free_staging_.back();
  free_staging_.pop_back();
  return s;
}

bool RdmaLink::post(int qp, ibv_send_wr& wr) {
  ibv_send_wr* bad = nullptr;
  if (int err = ibv_post_send(qps_->qp(qp), &wr, &bad)) {
    fail({HCOMM_ERR_TRANSPORT, describe() + ": " + core::errno_text("ibv_post_send", err)});
    return false;
  }
  --credits_[static_cast<size_t>(qp)];
  ++send_queued_[static_cast<size_t>(qp)];
  return true;
}

bool RdmaLink::post_message(std::list<Outgoing>::iterator frame) {
  Outgoing& o = *frame;
  const bool first = !o.header_posted;
  const size_t piece = std::min(first ? kFirstPiece : kLaterPiece, o.header.length - o.posted);
  const size_t head = kMessageHeaderBytes + (first ? sizeof(FrameHeader) : 0);
  const size_t total = head + piece;
  const int q = pick_qp(false);
  if (q < 0 || free_contexts_.empty()) return false;
  const bool in_line = total <= qps_->inline_limit();
  const bool in_place = o.zero_copy && !in_line;
  int staging = -1;
  if (!in_line && !in_place) {
    staging = take_staging();
    if (staging < 0) return false;
  }
  const int c = free_contexts_.back();
  free_contexts_.pop_back();
  SendContext& ctx = contexts_[static_cast<size_t>(c)];
  ctx.qp = q;
  ctx.staging = staging;
  ctx.frame = frame;

  MessageHeader mh;
  mh.seq = next_send_seq_++;
  mh.credits = static_cast<uint16_t>(owed_[static_cast<size_t>(q)]);
  owed_[static_cast<size_t>(q)] = 0;
  mh.starts_frame = first ? 1 : 0;
  mh.body = static_cast<uint32_t>(total - kMessageHeaderBytes);
  const std::byte* src = o.payload + o.posted;

  ibv_sge sge[2];
  int nsge = 1;
  if (staging >= 0) {
    std::byte* s = staging_slots_[static_cast<size_t>(staging)];
    std::memcpy(s, &mh, sizeof mh);
    if (first) std::memcpy(s + kMessageHeaderBytes, &o.header, sizeof o.header);
    if (piece) std::memcpy(s + head, src, piece);
    sge[0] = {reinterpret_cast<uintptr_t>(s), static_cast<uint32_t>(total),
              staging_lkeys_[static_cast<size_t>(staging)]};
    ++staged_;
  } else {
    std::memcpy(ctx.header, &mh, sizeof mh);
    if (first) std::memcpy(ctx.header + kMessageHeaderBytes, &o.header, sizeof o.header);
    sge[0] = {reinterpret_cast<uintptr_t>(ctx.header), static_cast<uint32_t>(head),
              header_region_.lkey()};
    if (piece) {
      sge[1] = {reinterpret_cast<uintptr_t>(src), static_cast<uint32_t>(piece),
                in_place ? o.registration.lkey() : 0};
      nsge = 2;
    }
    if (in_place) ++zero_copy_;
  }
  ibv_send_wr wr{};
  wr.wr_id = kSendBit | static_cast<uint64_t>(c);
  wr.sg_list = sge;
  wr.num_sge = nsge;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | (in_line ? IBV_SEND_INLINE : 0);
  if (!post(q, wr)) {
    ctx.frame.reset();
    free_contexts_.push_back(c);
    if (staging >= 0) free_staging_.push_back(staging);
    return false;
  }
  ++o.outstanding;
  o.posted += piece;
  o.header_posted = true;
  return true;
}

bool RdmaLink::post_credits(int qp) {
  if (free_contexts_.empty() || send_queued_[static_cast<size_t>(qp)] >= kSendDepth ||
      credits_[static_cast<size_t>(qp)] < 1)
    return false;
  const int c = free_contexts_.back();
  free_contexts_.pop_back();
  SendContext& ctx = contexts_[static_cast<size_t>(c)];
  ctx.qp = qp;
  ctx.staging = -1;
  ctx.frame.reset();
  MessageHeader mh;
  mh.seq = next_send_seq_++;
  mh.credits = static_cast<uint16_t>(owed_[static_cast<size_t>(qp)]);
  owed_[static_cast<size_t>(qp)] = 0;
  mh.credit_only = 1;
  std::memcpy(ctx.header, &mh, sizeof mh);
  ibv_sge sge{reinterpret_cast<uintptr_t>(ctx.header), kMessageHeaderBytes, header_region_.lkey()};
  ibv_send_wr wr{};
  wr.wr_id = kSendBit | static_cast<uint64_t>(c);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags =
      IBV_SEND_SIGNALED | (kMessageHeaderBytes <= qps_->inline_limit() ? IBV_SEND_INLINE : 0);
  if (!post(qp, wr)) {
    free_contexts_.push_back(c);
    return false;
  }
  return true;
}

bool RdmaLink::pump_sends() {
  if (pumping_ || !serving_ || !error().ok()) return false;
  pumping_ = true;
  bool worked = false;
  while (next_to_post_ != sendq_.end()) {
    Outgoing& o = *next_to_post_;
    while (error().ok() && (!o.header_posted || o.posted < o.header.length)) {
      if (!post_message(next_to_post_)) break;
      worked = true;
    }
    if (!error().ok() || !o.header_posted || o.posted < o.header.length) break;
    auto it = next_to_post_++;
    // Copied (staged or inline) frames are the sender's again at once; in-place ones once the
    // NIC has read them (their completions).
    if (!it->zero_copy) frame_sent(*it);
    maybe_retire(it);
  }
  // Owed credits with nothing to carry them: a credit-only message once half the slots are owed.
  for (int q = 0; error().ok() && q < qps_->size(); ++q)
    if (owed_[static_cast<size_t>(q)] >= kRecvSlots / 2 && post_credits(q)) worked = true;
  pumping_ = false;
  return worked;
}

void RdmaLink::frame_sent(Outgoing& o) {
  if (o.notified) return;
  o.notified = true;
  o.request->on_sent(Status{});
}

void RdmaLink::maybe_retire(std::list<Outgoing>::iterator it) {
  Outgoing& o = *it;
  const bool posted = o.header_posted && o.posted >= o.header.length;
  if (!posted || o.outstanding > 0) return;
  if (o.zero_copy) frame_sent(o);
  const bool goodbye = o.header.kind == static_cast<uint8_t>(FrameKind::close);
  if (it == next_to_post_) ++next_to_post_;
  sendq_.erase(it);
  if (goodbye) end_after_goodbye();
}

// ---- completions

bool RdmaLink::drain_cq() {
  ibv_wc wc[32];
  bool worked = false;
  for (;;) {
    const int n = ibv_poll_cq(qps_->cq(), 32, wc);
    if (n <= 0) break;
    worked = true;
    for (int i = 0; i < n; ++i) {
      const bool send = (wc[i].wr_id & kSendBit) != 0;
      if (wc[i].status != IBV_WC_SUCCESS) {
        if (send) on_send_done(wc[i].wr_id & ~kSendBit, false);
        if (error().ok()) fail({HCOMM_ERR_TRANSPORT, completion_error(wc[i])});
        continue;
      }
      if (send)
        on_send_done(wc[i].wr_id & ~kSendBit, true);
      else if (error().ok())
        on_receive(static_cast<int>(wc[i].wr_id), wc[i].byte_len);
    }
    if (n < 32) break;
  }
  return worked;
}

std::string RdmaLink::completion_error(const ibv_wc& wc) const {
  std::string s = describe() + ": work request completed with " + ibv_wc_status_str(wc.status) +
                  " (vendor error " + std::to_string(wc.vendor_err) + ")";
  if (wc.status == IBV_WC_RETRY_EXC_ERR)
    s += ": the peer stopped acknowledging (its process or the path is gone) after " +
         std::to_string(qps_->params().retry_cnt) +
         " retries (HCOMM_RDMA_RETRY_CNT, HCOMM_RDMA_TIMEOUT)";
  return s;
}

void RdmaLink::on_send_done(uint64_t context, bool ok) {
  SendContext& ctx = contexts_[static_cast<size_t>(context)];
  --send_queued_[static_cast<size_t>(ctx.qp)];
  if (ctx.staging >= 0) free_staging_.push_back(ctx.staging);
  ctx.staging = -1;
  free_contexts_.push_back(static_cast<int>(context));
  auto frame = std::exchange(ctx.frame, std::nullopt);
  if (!frame || !ok) return;
  --(*frame)->outstanding;
  maybe_retire(*frame);
}

bool RdmaLink::poll() {
  if (!serving_ || !error().ok()) return false;
  bool worked = drain_cq();
  if (pump_sends()) worked = true;
  return worked;
}

bool RdmaLink::prepare_sleep() {
  if (!serving_ || !error().ok()) return true;
  if (!armed_) {
    ibv_req_notify_cq(qps_->cq(), 0);
    armed_ = true;
  }
  // A completion that arrived before the arming raises no event: look once more.
  return !poll();
}

void RdmaLink::on_events(int, uint32_t) {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (ibv_get_cq_event(qps_->channel(), &cq, &context) == 0) {
    ibv_ack_cq_events(cq, 1);
    armed_ = false;
  }
  poll();
}

// ---- receiving

void RdmaLink::on_receive(int slot, uint32_t bytes) {
  MessageHeader mh;
  if (bytes < kMessageHeaderBytes)
    return fail({HCOMM_ERR_TRANSPORT,
                 describe() + ": a message of " + std::to_string(bytes) + " bytes is too short"});
  std::memcpy(&mh, qps_->slot(slot), sizeof mh);
  if (mh.magic != MessageHeader::kMagic || mh.body + kMessageHeaderBytes != bytes)
    return fail({HCOMM_ERR_TRANSPORT, describe() + ": a malformed message arrived (is the peer an "
                                                   "hcomm rank of the same version?)"});
  credits_[static_cast<size_t>(slot / kRecvSlots)] += mh.credits;
  if (mh.seq != next_recv_seq_) {
    held_[mh.seq] = Held{slot, bytes};  // an earlier one is still on another queue pair
    return;
  }
  process(slot, bytes);
  while (error().ok()) {
    auto it = held_.find(next_recv_seq_);
    if (it == held_.end()) break;
    Held h = it->second;
    held_.erase(it);
    process(h.slot, h.bytes);
  }
  pump_sends();  // credits came in, or owed ones go out
}

void RdmaLink::process(int slot, uint32_t bytes) {
  ++next_recv_seq_;
  const std::byte* base = qps_->slot(slot);
  MessageHeader mh;
  std::memcpy(&mh, base, sizeof mh);
  if (!mh.credit_only) {
    const std::byte* body = base + kMessageHeaderBytes;
    size_t n = bytes - kMessageHeaderBytes;
    auto event = IncomingFrame::Event::none;
    if (mh.starts_frame) {
      FrameHeader fh;
      if (n < sizeof fh || incoming_.active())
        return fail({HCOMM_ERR_TRANSPORT, describe() + ": frame boundaries lost"});
      std::memcpy(&fh, body, sizeof fh);
      if (fh.magic != FrameHeader::kMagic || fh.version != FrameHeader::kVersion)
        return fail({HCOMM_ERR_TRANSPORT, describe() + ": a frame without hcomm's magic arrived"});
      body += sizeof fh;
      n -= sizeof fh;
      if (n > fh.length)
        return fail({HCOMM_ERR_TRANSPORT, describe() + ": a frame ran past its length"});
      event = incoming_.begin(fh);
    } else if (n > 0 && !incoming_.active()) {
      return fail({HCOMM_ERR_TRANSPORT, describe() + ": payload without a frame"});
    } else if (n > incoming_.missing()) {
      return fail({HCOMM_ERR_TRANSPORT, describe() + ": a frame ran past its length"});
    }
    if (event == IncomingFrame::Event::none && error().ok() && n > 0)
      event = incoming_.add(body, n);
    handle(event);
  }
  if (!error().ok()) return;
  Status st = qps_->post_receive(slot);
  if (!st.ok()) return fail(st);
  ++owed_[static_cast<size_t>(slot / kRecvSlots)];
}

// ---- failure

void RdmaLink::on_device_fault(const std::string& what) {
  fail({HCOMM_ERR_TRANSPORT, describe() + ": " + what});
}

void RdmaLink::on_qp_fault(ibv_qp* qp, const std::string& what) {
  if (qps_->owns(qp)) fail({HCOMM_ERR_TRANSPORT, describe() + ": " + what});
}

std::vector<SendRequest*> RdmaLink::stop() {
  // The NIC stops reading the application's buffers before they are handed back.
  qps_->to_error();
  for (auto& ctx : contexts_) ctx.frame.reset();
  std::vector<SendRequest*> unsent;
  for (auto& o : sendq_)
    if (!o.notified) unsent.push_back(o.request);
  sendq_.clear();
  next_to_post_ = sendq_.end();
  return unsent;
}

}  // namespace hcomm::transport::rdma
