#include "transport/rdma/rdma_link.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

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

static_assert(sizeof(FrameHeader) == 64, "frame header size");
constexpr size_t kMessageHeaderBytes = 16;
constexpr size_t kHeaderArea = 128;  // per send context: message header + frame header
constexpr uint64_t kSendBit = uint64_t{1} << 63;
// Payload per message, a multiple of 64 bytes so pieces keep any element size's granularity.
constexpr size_t kFirstPiece = (RdmaLink::kSlotBytes - kMessageHeaderBytes - 64) / 64 * 64;
constexpr size_t kLaterPiece = (RdmaLink::kSlotBytes - kMessageHeaderBytes) / 64 * 64;
constexpr int kStagingPerRegion = 16;
constexpr int kMaxStaging = 256;  // slots per link when the pool may grow (16 MiB)
// Below this a frame is copied into staging even from a registered buffer: one copy of a few KiB
// costs less than the second scatter-gather entry and the cache lookup.
constexpr size_t kZeroCopyMin = 16 * 1024;
constexpr size_t kPage = 4096;

std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

}  // namespace

// ---- endpoint text

std::string RdmaEndpoint::encode() const {
  std::ostringstream out;
  char hex[3];
  for (uint8_t b : gid.raw) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    out << hex;
  }
  out << ' ' << static_cast<int>(mtu) << ' ' << psn << ' ';
  for (size_t i = 0; i < qpns.size(); ++i) out << (i ? "," : "") << qpns[i];
  return out.str();
}

Expected<RdmaEndpoint> RdmaEndpoint::decode(const std::string& text) {
  RdmaEndpoint e;
  std::istringstream in(text);
  std::string gid, qpns;
  int mtu = 0;
  if (!(in >> gid >> mtu >> e.psn >> qpns) || gid.size() != 32 || mtu < IBV_MTU_256 ||
      mtu > IBV_MTU_4096)
    return Status{HCOMM_ERR_INTERNAL, "malformed RDMA endpoint '" + text + "'"};
  for (size_t i = 0; i < 16; ++i)
    e.gid.raw[i] = static_cast<uint8_t>(std::stoul(gid.substr(2 * i, 2), nullptr, 16));
  e.mtu = static_cast<ibv_mtu>(mtu);
  std::istringstream list(qpns);
  for (std::string n; std::getline(list, n, ',');) e.qpns.push_back(std::stoul(n));
  return e;
}

// ---- creation

RdmaLink::RdmaLink(std::shared_ptr<RdmaDevice> device, RdmaLinkParams params)
    : device_(std::move(device)), params_(params) {
  stamp_.my_rank = params_.my_rank;
  name_ = "rdma " + device_->name() + " (rank " + std::to_string(params_.peer) + ")";
  next_to_post_ = sendq_.end();
}

Expected<std::unique_ptr<RdmaLink>> RdmaLink::create(std::shared_ptr<RdmaDevice> device,
                                                     RdmaLinkParams params) {
  std::unique_ptr<RdmaLink> link(new RdmaLink(std::move(device), params));
  Status st = link->allocate();
  if (!st.ok()) return st;
  return link;
}

Status RdmaLink::add_region(Region& region, size_t bytes) {
  region.base =
      static_cast<std::byte*>(std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage));
  if (region.base == nullptr)
    return {HCOMM_ERR_OUT_OF_MEM,
            "cannot allocate " + std::to_string(bytes) + " bytes of RDMA slots"};
  region.bytes = bytes;
  region.mr = ibv_reg_mr(device_->pd(), region.base, bytes, IBV_ACCESS_LOCAL_WRITE);
  if (region.mr == nullptr) return device_->registration_error(bytes, errno);
  return {};
}

Status RdmaLink::allocate() {
  ibv_context* ctx = device_->context();
  const int nq = params_.num_qps;
  channel_ = ibv_create_comp_channel(ctx);
  if (channel_ == nullptr)
    return {HCOMM_ERR_TRANSPORT, errno_text("ibv_create_comp_channel", errno)};
  fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);
  cq_ = ibv_create_cq(ctx, nq * (kSendDepth + kRecvSlots) + 8, nullptr, channel_, 0);
  if (cq_ == nullptr) return {HCOMM_ERR_TRANSPORT, errno_text("ibv_create_cq", errno)};

  std::mt19937 rng(std::random_device{}());
  psn_ = rng() & 0xffffff;
  inline_limit_ = params_.max_inline;
  for (int q = 0; q < nq; ++q) {
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = kSendDepth;
    init.cap.max_recv_wr = kRecvSlots;
    init.cap.max_send_sge = 2;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = static_cast<uint32_t>(params_.max_inline);
    ibv_qp* qp = ibv_create_qp(device_->pd(), &init);
    if (qp == nullptr && params_.max_inline > 0) {
      init.cap.max_inline_data = 0;  // the device supports less: no inline sends
      qp = ibv_create_qp(device_->pd(), &init);
    }
    if (qp == nullptr) return {HCOMM_ERR_TRANSPORT, errno_text("ibv_create_qp", errno)};
    qps_.push_back(qp);
    inline_limit_ = std::min<size_t>(inline_limit_, init.cap.max_inline_data);
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = device_->port();
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
    if (int err = ibv_modify_qp(
            qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return {HCOMM_ERR_TRANSPORT, errno_text("ibv_modify_qp to INIT", err)};
  }

  Status st = add_region(recv_region_, static_cast<size_t>(nq) * kRecvSlots * kSlotBytes);
  if (!st.ok()) return st;
  st = add_region(header_region_, static_cast<size_t>(nq) * kSendDepth * kHeaderArea);
  if (!st.ok()) return st;
  contexts_.resize(static_cast<size_t>(nq) * kSendDepth);
  for (size_t i = 0; i < contexts_.size(); ++i) {
    contexts_[i].header = header_region_.base + i * kHeaderArea;
    free_contexts_.push_back(static_cast<int>(contexts_.size() - 1 - i));
  }
  credits_.assign(static_cast<size_t>(nq), kRecvSlots);
  owed_.assign(static_cast<size_t>(nq), 0);
  send_queued_.assign(static_cast<size_t>(nq), 0);
  for (int slot = 0; slot < nq * kRecvSlots; ++slot) {
    st = post_receive_slot(slot);
    if (!st.ok()) return st;
  }
  return grow_staging();
}

Status RdmaLink::grow_staging() {
  Region& region = staging_regions_.emplace_back();
  Status st = add_region(region, kStagingPerRegion * kSlotBytes);
  if (!st.ok()) return st;
  for (int i = 0; i < kStagingPerRegion; ++i) {
    free_staging_.push_back(static_cast<int>(staging_slots_.size()));
    staging_slots_.push_back(region.base + static_cast<size_t>(i) * kSlotBytes);
    staging_lkeys_.push_back(region.mr->lkey);
  }
  return {};
}

RdmaEndpoint RdmaLink::local_endpoint() const {
  RdmaEndpoint e;
  e.gid = device_->gid();
  e.mtu = device_->active_mtu();
  e.psn = psn_;
  for (ibv_qp* qp : qps_) e.qpns.push_back(qp->qp_num);
  return e;
}

Status RdmaLink::connect(const RdmaEndpoint& remote) {
  if (remote.qpns.size() != qps_.size())
    return {HCOMM_ERR_INVALID_ARG,
            "rank " + std::to_string(params_.peer) + " opened " +
                std::to_string(remote.qpns.size()) + " queue pair(s) per peer and this rank " +
                std::to_string(qps_.size()) + ": set the same HCOMM_NUM_QPS on every rank"};
  for (size_t q = 0; q < qps_.size(); ++q) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = std::min(device_->active_mtu(), remote.mtu);
    attr.dest_qp_num = remote.qpns[q];
    attr.rq_psn = remote.psn;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 12;
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = remote.gid;
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(device_->gid_index());
    attr.ah_attr.grh.hop_limit = 64;
    attr.ah_attr.grh.traffic_class = static_cast<uint8_t>(params_.traffic_class);
    attr.ah_attr.port_num = device_->port();
    if (int err =
            ibv_modify_qp(qps_[q], &attr,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      return {HCOMM_ERR_TRANSPORT,
              errno_text(("ibv_modify_qp to RTR towards " + gid_text(remote.gid)).c_str(), err)};
    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = static_cast<uint8_t>(params_.timeout);
    attr.retry_cnt = static_cast<uint8_t>(params_.retry_cnt);
    attr.rnr_retry = static_cast<uint8_t>(params_.retry_cnt);  // credits make RNR impossible
    attr.sq_psn = psn_;
    attr.max_rd_atomic = 1;
    if (int err = ibv_modify_qp(qps_[q], &attr,
                                IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
      return {HCOMM_ERR_TRANSPORT, errno_text("ibv_modify_qp to RTS", err)};
  }
  name_ = "rdma " + device_->name() + " -> " + gid_text(remote.gid) + " (rank " +
          std::to_string(params_.peer) + ", " + std::to_string(qps_.size()) + " QP)";
  return {};
}

void RdmaLink::start(ProgressEngine& engine, LinkObserver& observer,
                     std::atomic<uint64_t>* bytes_sent, UpCallback on_up) {
  stamp_.bytes_sent = bytes_sent;
  engine_ = &engine;
  observer_ = &observer;
  frames_.emplace(observer, posted_, unexpected_, params_.peer);
  started_ = true;
  up_ = true;
  engine.add_poller(this);
  engine.add_fd(channel_->fd, EPOLLIN, this);
  device_->events().subscribe(engine, this);
  HCOMM_LOG(info, core::log::kNet, "link up: %s", name_.c_str());
  if (on_up) on_up(Status{});
}

RdmaLink::~RdmaLink() {
  if (started_) {
    device_->events().unsubscribe(this);
    engine_->remove_poller(this);
    engine_->remove_fd(channel_->fd);
  }
  sendq_.clear();  // drops registrations (MrCache handles)
  for (ibv_qp* qp : qps_) ibv_destroy_qp(qp);
  if (cq_) ibv_destroy_cq(cq_);
  if (channel_) ibv_destroy_comp_channel(channel_);
  auto free_region = [](Region& r) {
    if (r.mr) ibv_dereg_mr(r.mr);
    std::free(r.base);
  };
  free_region(recv_region_);
  free_region(header_region_);
  for (auto& r : staging_regions_) free_region(r);
}

LinkCaps RdmaLink::caps() const {
  LinkCaps c;
  c.medium = "rdma";
  c.max_frame_bytes = SIZE_MAX;  // split into messages of kSlotBytes
  c.one_sided = true;
  c.detects_peer_failure = true;  // completion errors (retry exceeded)
  return c;
}

// ---- sending

void RdmaLink::post_send(SendRequest* request) {
  if (!stamp_.admit(request, error_, peer_closed_)) return;
  const bool data = request->header.kind == static_cast<uint8_t>(FrameKind::data);
  Outgoing& o = sendq_.emplace_back();
  o.header = request->header;
  o.payload = static_cast<const std::byte*>(request->payload);
  o.request = request;
  if (next_to_post_ == sendq_.end()) next_to_post_ = std::prev(sendq_.end());
  if (params_.buffers == BufferMode::zero_copy && data && request->buffer != nullptr &&
      o.header.length >= kZeroCopyMin) {
    MrCache& cache = device_->mr_cache();
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

void RdmaLink::send_control(const FrameHeader& header, std::string payload) {
  if (!error_.ok() || !up_ || closing_) return;
  Outgoing& o = sendq_.emplace_back();
  o.owned = std::move(payload);
  o.header = header;
  o.header.length = o.owned.size();
  stamp_.stamp(o.header);
  if (next_to_post_ == sendq_.end()) next_to_post_ = std::prev(sendq_.end());
  pump_sends();
}

void RdmaLink::close() {
  if (closing_) return;
  closing_ = true;
  if (!up_ || !error_.ok()) return;
  // A goodbye frame; the link fails (quietly) once it left, see maybe_retire().
  Outgoing& o = sendq_.emplace_back();
  o.header.kind = static_cast<uint8_t>(FrameKind::close);
  stamp_.stamp(o.header);
  if (next_to_post_ == sendq_.end()) next_to_post_ = std::prev(sendq_.end());
  pump_sends();
}

int RdmaLink::pick_qp(bool credit_only) {
  const int nq = static_cast<int>(qps_.size());
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
    const bool may_grow = params_.buffers != BufferMode::fixed &&
                          static_cast<int>(staging_slots_.size()) < kMaxStaging;
    if (!may_grow) return -1;
    Status st = grow_staging();
    if (!st.ok()) {
      HCOMM_LOG(warn, core::log::kNet, "%s: cannot grow the staging pool: %s", name_.c_str(),
                st.to_string().c_str());
      return -1;
    }
  }
  const int s = free_staging_.back();
  free_staging_.pop_back();
  return s;
}

bool RdmaLink::post_message(std::list<Outgoing>::iterator frame) {
  Outgoing& o = *frame;
  const bool first = !o.header_posted;
  const size_t piece = std::min(first ? kFirstPiece : kLaterPiece, o.header.length - o.posted);
  const size_t head = kMessageHeaderBytes + (first ? sizeof(FrameHeader) : 0);
  const size_t total = head + piece;
  const int q = pick_qp(false);
  if (q < 0 || free_contexts_.empty()) return false;
  const bool in_line = total <= inline_limit_;
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
  const std::byte* src =
      (o.request != nullptr ? o.payload : reinterpret_cast<const std::byte*>(o.owned.data())) +
      o.posted;

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
              header_region_.mr->lkey};
    if (piece) {
      sge[1] = {reinterpret_cast<uintptr_t>(src), static_cast<uint32_t>(piece),
                in_place ? o.registration.lkey() : 0};
      nsge = 2;
    }
    if (in_place) ++zero_copy_;
  }
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = kSendBit | static_cast<uint64_t>(c);
  wr.sg_list = sge;
  wr.num_sge = nsge;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | (in_line ? IBV_SEND_INLINE : 0);
  if (int err = ibv_post_send(qps_[static_cast<size_t>(q)], &wr, &bad)) {
    ctx.frame.reset();
    free_contexts_.push_back(c);
    if (staging >= 0) free_staging_.push_back(staging);
    fail({HCOMM_ERR_TRANSPORT, name_ + ": " + errno_text("ibv_post_send", err)}, false);
    return false;
  }
  --credits_[static_cast<size_t>(q)];
  ++send_queued_[static_cast<size_t>(q)];
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
  ibv_sge sge{reinterpret_cast<uintptr_t>(ctx.header), kMessageHeaderBytes,
              header_region_.mr->lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = kSendBit | static_cast<uint64_t>(c);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | (kMessageHeaderBytes <= inline_limit_ ? IBV_SEND_INLINE : 0);
  if (int err = ibv_post_send(qps_[static_cast<size_t>(qp)], &wr, &bad)) {
    free_contexts_.push_back(c);
    fail({HCOMM_ERR_TRANSPORT, name_ + ": " + errno_text("ibv_post_send", err)}, false);
    return false;
  }
  --credits_[static_cast<size_t>(qp)];
  ++send_queued_[static_cast<size_t>(qp)];
  return true;
}

bool RdmaLink::pump_sends() {
  if (pumping_ || !started_ || !error_.ok()) return false;
  pumping_ = true;
  bool worked = false;
  while (next_to_post_ != sendq_.end()) {
    Outgoing& o = *next_to_post_;
    while (error_.ok() && (!o.header_posted || o.posted < o.header.length)) {
      if (!post_message(next_to_post_)) break;
      worked = true;
    }
    if (!error_.ok() || !o.header_posted || o.posted < o.header.length) break;
    auto it = next_to_post_++;
    // Copied (staged or inline) frames are the sender's again at once; in-place ones once the
    // NIC has read them (their completions).
    if (!it->zero_copy) frame_sent(*it);
    maybe_retire(it);
  }
  // Owed credits with nothing to carry them: a credit-only message once half the slots are owed.
  for (size_t q = 0; error_.ok() && q < qps_.size(); ++q)
    if (owed_[q] >= kRecvSlots / 2 && post_credits(static_cast<int>(q))) worked = true;
  pumping_ = false;
  return worked;
}

void RdmaLink::frame_sent(Outgoing& o) {
  if (o.notified) return;
  o.notified = true;
  if (o.request != nullptr) o.request->on_sent(Status{});
}

void RdmaLink::maybe_retire(std::list<Outgoing>::iterator it) {
  Outgoing& o = *it;
  const bool posted = o.header_posted && o.posted >= o.header.length;
  if (!posted || o.outstanding > 0) return;
  if (o.zero_copy) frame_sent(o);
  const bool goodbye = o.header.kind == static_cast<uint8_t>(FrameKind::close);
  if (it == next_to_post_) ++next_to_post_;
  sendq_.erase(it);
  if (goodbye) fail({HCOMM_ERR_ABORTED, "the communicator was closed"}, false);
}

// ---- completions

bool RdmaLink::drain_cq() {
  ibv_wc wc[32];
  bool worked = false;
  for (;;) {
    const int n = ibv_poll_cq(cq_, 32, wc);
    if (n <= 0) break;
    worked = true;
    for (int i = 0; i < n; ++i) {
      const bool send = (wc[i].wr_id & kSendBit) != 0;
      if (wc[i].status != IBV_WC_SUCCESS) {
        if (send) on_send_done(wc[i].wr_id & ~kSendBit, false);
        if (error_.ok()) fail({HCOMM_ERR_TRANSPORT, completion_error(wc[i])}, false);
        continue;
      }
      if (send)
        on_send_done(wc[i].wr_id & ~kSendBit, true);
      else if (error_.ok())
        on_receive(static_cast<int>(wc[i].wr_id), wc[i].byte_len);
    }
    if (n < 32) break;
  }
  return worked;
}

std::string RdmaLink::completion_error(const ibv_wc& wc) const {
  std::string s = name_ + ": work request completed with " + ibv_wc_status_str(wc.status) +
                  " (vendor error " + std::to_string(wc.vendor_err) + ")";
  if (wc.status == IBV_WC_RETRY_EXC_ERR)
    s += ": the peer stopped acknowledging (its process or the path is gone) after " +
         std::to_string(params_.retry_cnt) + " retries (HCOMM_RDMA_RETRY_CNT, HCOMM_RDMA_TIMEOUT)";
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
  if (!started_ || !error_.ok()) return false;
  bool worked = drain_cq();
  if (pump_sends()) worked = true;
  return worked;
}

bool RdmaLink::prepare_sleep() {
  if (!started_ || !error_.ok()) return true;
  if (!armed_) {
    ibv_req_notify_cq(cq_, 0);
    armed_ = true;
  }
  // A completion that arrived before the arming raises no event: look once more.
  return !poll();
}

void RdmaLink::on_events(int, uint32_t) {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &context) == 0) {
    ibv_ack_cq_events(cq, 1);
    armed_ = false;
  }
  poll();
}

// ---- receiving

Status RdmaLink::post_receive_slot(int slot) {
  const int q = slot / kRecvSlots;
  ibv_sge sge{
      reinterpret_cast<uintptr_t>(recv_region_.base + static_cast<size_t>(slot) * kSlotBytes),
      static_cast<uint32_t>(kSlotBytes), recv_region_.mr->lkey};
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = static_cast<uint64_t>(slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (int err = ibv_post_recv(qps_[static_cast<size_t>(q)], &wr, &bad))
    return {HCOMM_ERR_TRANSPORT, name_ + ": " + errno_text("ibv_post_recv", err)};
  return {};
}

void RdmaLink::on_receive(int slot, uint32_t bytes) {
  const std::byte* base = recv_region_.base + static_cast<size_t>(slot) * kSlotBytes;
  MessageHeader mh;
  if (bytes < kMessageHeaderBytes) {
    return fail({HCOMM_ERR_TRANSPORT,
                 name_ + ": a message of " + std::to_string(bytes) + " bytes is too short"},
                false);
  }
  std::memcpy(&mh, base, sizeof mh);
  if (mh.magic != MessageHeader::kMagic || mh.body + kMessageHeaderBytes != bytes)
    return fail({HCOMM_ERR_TRANSPORT, name_ + ": a malformed message arrived (is the peer an "
                                              "hcomm rank of the same version?)"},
                false);
  credits_[static_cast<size_t>(slot / kRecvSlots)] += mh.credits;
  if (mh.seq != next_recv_seq_) {
    held_[mh.seq] = Held{slot, bytes};  // an earlier one is still on another queue pair
    return;
  }
  process(slot, bytes);
  while (error_.ok()) {
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
  const std::byte* base = recv_region_.base + static_cast<size_t>(slot) * kSlotBytes;
  MessageHeader mh;
  std::memcpy(&mh, base, sizeof mh);
  if (!mh.credit_only) {
    const std::byte* body = base + kMessageHeaderBytes;
    size_t n = bytes - kMessageHeaderBytes;
    auto outcome = FrameAssembler::Outcome::more;
    if (mh.starts_frame) {
      FrameHeader fh;
      if (n < sizeof fh || frames_->active())
        return fail({HCOMM_ERR_TRANSPORT, name_ + ": frame boundaries lost"}, false);
      std::memcpy(&fh, body, sizeof fh);
      if ((fh.magic != FrameHeader::kMagic || fh.version != FrameHeader::kVersion))
        return fail({HCOMM_ERR_TRANSPORT, name_ + ": a frame without hcomm's magic arrived"},
                    false);
      body += sizeof fh;
      n -= sizeof fh;
      if (n > fh.length)
        return fail({HCOMM_ERR_TRANSPORT, name_ + ": a frame ran past its length"}, false);
      outcome = frames_->begin(fh);
    } else if (n > 0 && !frames_->active()) {
      return fail({HCOMM_ERR_TRANSPORT, name_ + ": payload without a frame"}, false);
    } else if (n > frames_->missing()) {
      return fail({HCOMM_ERR_TRANSPORT, name_ + ": a frame ran past its length"}, false);
    }
    if (outcome == FrameAssembler::Outcome::more && error_.ok() && n > 0)
      outcome = frames_->add(body, n);
    if (outcome == FrameAssembler::Outcome::goodbye)
      return fail(
          {HCOMM_ERR_ABORTED, "rank " + std::to_string(params_.peer) + " closed its communicator"},
          true);
  }
  if (!error_.ok()) return;
  Status st = post_receive_slot(slot);
  if (!st.ok()) return fail(st, false);
  ++owed_[static_cast<size_t>(slot / kRecvSlots)];
}

void RdmaLink::post_recv(RecvRequest* request) {
  // Frames that arrived before the link ended are still delivered (a peer may send and then
  // destroy its communicator before this rank posts the matching receive).
  if (unexpected_.deliver_stored(request)) return;
  if (!error_.ok()) return request->on_received(error_);
  posted_.post(request);
}

bool RdmaLink::cancel_recv(RecvRequest* request) {
  return posted_.cancel(request);
}

// ---- failure

void RdmaLink::on_device_fault(const std::string& what) {
  fail({HCOMM_ERR_TRANSPORT, name_ + ": " + what}, false);
}

void RdmaLink::on_qp_fault(ibv_qp* qp, const std::string& what) {
  if (std::find(qps_.begin(), qps_.end(), qp) != qps_.end())
    fail({HCOMM_ERR_TRANSPORT, name_ + ": " + what}, false);
}

void RdmaLink::abandon() {
  closing_ = true;  // no report to the observer
  fail({HCOMM_ERR_ABORTED, name_ + " was abandoned for another link"}, false);
}

void RdmaLink::fail(const Status& status, bool graceful) {
  if (!error_.ok()) return;
  error_ = status;
  peer_closed_ = graceful;
  const bool was_up = up_;
  up_ = false;
  // The NIC stops reading the application's buffers before they are handed back.
  for (ibv_qp* qp : qps_) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(qp, &attr, IBV_QP_STATE);
  }
  for (auto& ctx : contexts_) ctx.frame.reset();
  const Status send_status = graceful ? Status{} : status;
  auto queued = std::move(sendq_);
  sendq_.clear();
  next_to_post_ = sendq_.end();
  for (auto& o : queued)
    if (o.request != nullptr && !o.notified) o.request->on_sent(send_status);
  auto posted = posted_.take_all();
  if (frames_) frames_->fail(status);
  for (RecvRequest* request : posted) request->on_received(status);
  if (was_up && !closing_) observer_->on_link_failed(params_.peer, status, graceful);
}

}  // namespace hcomm::transport::rdma
