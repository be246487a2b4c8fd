// What one RDMA link is made of below its frames: a completion channel and queue, HCOMM_NUM_QPS
// reliable-connected queue pairs on one RdmaDevice, and their receive slots — made on the
// creating thread (queue pairs in INIT, every slot's receive posted) so that the peer may send as
// soon as both sides connected, then connected towards the peer's endpoint (RTR, RTS). RdmaLink
// (rdma_link.hpp) moves frames over them on the engine thread.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hcomm/status.hpp"
#include "transport/rdma/rdma_device.hpp"

namespace hcomm::transport::rdma {

/// What the peer needs to connect to this side: published at the rendezvous.
struct RdmaEndpoint {
  ibv_gid gid{};
  ibv_mtu mtu = IBV_MTU_1024;
  std::vector<uint32_t> qpns;
  uint32_t psn = 0;

  std::string encode() const;
  static Expected<RdmaEndpoint> decode(const std::string& text);
};

/// Page-aligned memory registered for local access for as long as it lives (hcomm's own: slots,
/// staging, headers; applications' buffers go through the MrCache). Move-only.
class RegisteredRegion {
 public:
  static Expected<RegisteredRegion> allocate(RdmaDevice& device, size_t bytes);
  RegisteredRegion() = default;
  RegisteredRegion(RegisteredRegion&& other) noexcept { *this = std::move(other); }
  RegisteredRegion& operator=(RegisteredRegion&& other) noexcept;
  ~RegisteredRegion();

  std::byte* base() const { return base_; }
  uint32_t lkey() const { return mr_->lkey; }

 private:
  std::byte* base_ = nullptr;
  ibv_mr* mr_ = nullptr;
};

struct QueuePairParams {
  int num_qps = 1;
  size_t max_inline = 256;
  int timeout = 14;
  int retry_cnt = 6;
  int traffic_class = 0;
};

class QueuePairSet {
 public:
  static constexpr size_t kSlotBytes = 64 * 1024;
  static constexpr int kRecvSlots = 16;  // per queue pair
  static constexpr int kSendDepth = 32;  // work requests in flight per queue pair

  /// Queue pairs towards `peer` (for messages), in INIT with every receive slot posted.
  static Expected<std::unique_ptr<QueuePairSet>> create(std::shared_ptr<RdmaDevice> device,
                                                        QueuePairParams params, int peer);
  ~QueuePairSet();
  QueuePairSet(const QueuePairSet&) = delete;
  QueuePairSet& operator=(const QueuePairSet&) = delete;

  RdmaEndpoint local_endpoint() const;
  /// Moves the queue pairs to RTR and RTS towards `remote`.
  Status connect(const RdmaEndpoint& remote);
  /// "rdma rxe0 -> fe80::... (rank 3, 2 QP)" once connected.
  const std::string& name() const { return name_; }

  RdmaDevice& device() const { return *device_; }
  const QueuePairParams& params() const { return params_; }
  int size() const { return static_cast<int>(qps_.size()); }
  ibv_qp* qp(int q) const { return qps_[static_cast<size_t>(q)]; }
  bool owns(const ibv_qp* qp) const;
  ibv_cq* cq() const { return cq_; }
  ibv_comp_channel* channel() const { return channel_; }
  /// Sends of at most this many bytes may be inline (IBV_SEND_INLINE).
  size_t inline_limit() const { return inline_limit_; }

  /// Receive slot `slot` (kRecvSlots per queue pair, queue pair slot / kRecvSlots).
  const std::byte* slot(int slot) const {
    return recv_region_.base() + static_cast<size_t>(slot) * kSlotBytes;
  }
  Status post_receive(int slot);
  /// Moves every queue pair to the error state: the NIC stops touching memory.
  void to_error();

 private:
  QueuePairSet(std::shared_ptr<RdmaDevice> device, QueuePairParams params, int peer);
  Status allocate();

  std::shared_ptr<RdmaDevice> device_;
  QueuePairParams params_;
  int peer_;
  std::string name_;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::vector<ibv_qp*> qps_;
  uint32_t psn_ = 0;
  size_t inline_limit_ = 0;
  RegisteredRegion recv_region_;
};

}  // namespace hcomm::transport::rdma
