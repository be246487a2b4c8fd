#include "transport/rdma/queue_pairs.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

#include "core/errno_text.hpp"

namespace hcomm::transport::rdma {
namespace {
constexpr size_t kPage = 4096;
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
  auto malformed = [&] {
    return Status{HCOMM_ERR_INTERNAL, "malformed RDMA endpoint '" + text + "'"};
  };
  if (!(in >> gid >> mtu >> e.psn >> qpns) || gid.size() != 32 || mtu < IBV_MTU_256 ||
      mtu > IBV_MTU_4096 || gid.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    return malformed();
  for (size_t i = 0; i < 16; ++i)
    e.gid.raw[i] = static_cast<uint8_t>(std::stoul(gid.substr(2 * i, 2), nullptr, 16));
  e.mtu = static_cast<ibv_mtu>(mtu);
  std::istringstream list(qpns);
  for (std::string n; std::getline(list, n, ',');) {
    if (n.empty() || n.size() > 8 || n.find_first_not_of("0123456789") != std::string::npos)
      return malformed();
    e.qpns.push_back(static_cast<uint32_t>(std::stoul(n)));
  }
  return e;
}

// ---- registered memory

Expected<RegisteredRegion> RegisteredRegion::allocate(RdmaDevice& device, size_t bytes) {
  RegisteredRegion r;
  r.base_ = static_cast<std::byte*>(std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage));
  if (r.base_ == nullptr)
    return Status{HCOMM_ERR_OUT_OF_MEM,
                  "cannot allocate " + std::to_string(bytes) + " bytes of RDMA slots"};
  r.mr_ = ibv_reg_mr(device.pd(), r.base_, bytes, IBV_ACCESS_LOCAL_WRITE);
  if (r.mr_ == nullptr) return device.registration_error(bytes, errno);
  return r;
}

RegisteredRegion& RegisteredRegion::operator=(RegisteredRegion&& other) noexcept {
  if (this != &other) {
    this->~RegisteredRegion();
    base_ = std::exchange(other.base_, nullptr);
    mr_ = std::exchange(other.mr_, nullptr);
  }
  return *this;
}

RegisteredRegion::~RegisteredRegion() {
  if (mr_ != nullptr) ibv_dereg_mr(mr_);
  std::free(base_);
  mr_ = nullptr;
  base_ = nullptr;
}

// ---- queue pairs

QueuePairSet::QueuePairSet(std::shared_ptr<RdmaDevice> device, QueuePairParams params, int peer)
    : device_(std::move(device)), params_(params), peer_(peer) {
  name_ = "rdma " + device_->name() + " (rank " + std::to_string(peer_) + ")";
}

Expected<std::unique_ptr<QueuePairSet>> QueuePairSet::create(std::shared_ptr<RdmaDevice> device,
                                                             QueuePairParams params, int peer) {
  std::unique_ptr<QueuePairSet> set(new QueuePairSet(std::move(device), params, peer));
  Status st = set->allocate();
  if (!st.ok()) return st;
  return set;
}

Status QueuePairSet::allocate() {
  ibv_context* ctx = device_->context();
  const int nq = params_.num_qps;
  channel_ = ibv_create_comp_channel(ctx);
  if (channel_ == nullptr)
    return {HCOMM_ERR_TRANSPORT, core::errno_text("ibv_create_comp_channel", errno)};
  fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);
  cq_ = ibv_create_cq(ctx, nq * (kSendDepth + kRecvSlots) + 8, nullptr, channel_, 0);
  if (cq_ == nullptr) return {HCOMM_ERR_TRANSPORT, core::errno_text("ibv_create_cq", errno)};

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
    if (qp == nullptr) return {HCOMM_ERR_TRANSPORT, core::errno_text("ibv_create_qp", errno)};
    qps_.push_back(qp);
    inline_limit_ = std::min<size_t>(inline_limit_, init.cap.max_inline_data);
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = device_->port();
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
    if (int err = ibv_modify_qp(
            qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return {HCOMM_ERR_TRANSPORT, core::errno_text("ibv_modify_qp to INIT", err)};
  }
  auto region =
      RegisteredRegion::allocate(*device_, static_cast<size_t>(nq) * kRecvSlots * kSlotBytes);
  if (!region.ok()) return region.status();
  recv_region_ = std::move(region.value());
  for (int slot = 0; slot < nq * kRecvSlots; ++slot) {
    Status st = post_receive(slot);
    if (!st.ok()) return st;
  }
  return {};
}

QueuePairSet::~QueuePairSet() {
  for (ibv_qp* qp : qps_) ibv_destroy_qp(qp);
  if (cq_) ibv_destroy_cq(cq_);
  if (channel_) ibv_destroy_comp_channel(channel_);
}

RdmaEndpoint QueuePairSet::local_endpoint() const {
  RdmaEndpoint e;
  e.gid = device_->gid();
  e.mtu = device_->active_mtu();
  e.psn = psn_;
  for (ibv_qp* qp : qps_) e.qpns.push_back(qp->qp_num);
  return e;
}

Status QueuePairSet::connect(const RdmaEndpoint& remote) {
  if (remote.qpns.size() != qps_.size())
    return {HCOMM_ERR_INVALID_ARG,
            "rank " + std::to_string(peer_) + " opened " + std::to_string(remote.qpns.size()) +
                " queue pair(s) per peer and this rank " + std::to_string(qps_.size()) +
                ": set the same HCOMM_NUM_QPS on every rank"};
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
              core::errno_text("ibv_modify_qp to RTR towards " + gid_text(remote.gid), err)};
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
      return {HCOMM_ERR_TRANSPORT, core::errno_text("ibv_modify_qp to RTS", err)};
  }
  name_ = "rdma " + device_->name() + " -> " + gid_text(remote.gid) + " (rank " +
          std::to_string(peer_) + ", " + std::to_string(qps_.size()) + " QP)";
  return {};
}

bool QueuePairSet::owns(const ibv_qp* qp) const {
  return std::find(qps_.begin(), qps_.end(), qp) != qps_.end();
}

Status QueuePairSet::post_receive(int slot) {
  const int q = slot / kRecvSlots;
  ibv_sge sge{reinterpret_cast<uintptr_t>(QueuePairSet::slot(slot)),
              static_cast<uint32_t>(kSlotBytes), recv_region_.lkey()};
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = static_cast<uint64_t>(slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (int err = ibv_post_recv(qps_[static_cast<size_t>(q)], &wr, &bad))
    return {HCOMM_ERR_TRANSPORT, name_ + ": " + core::errno_text("ibv_post_recv", err)};
  return {};
}

void QueuePairSet::to_error() {
  for (ibv_qp* qp : qps_) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(qp, &attr, IBV_QP_STATE);
  }
}

}  // namespace hcomm::transport::rdma
