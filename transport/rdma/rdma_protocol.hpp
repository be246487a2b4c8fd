// RDMA (RoCEv2) as a registered protocol: reaches every rank that opened a device too. Its
// address names the device; queue pairs are made per peer in prepare() and their numbers
// exchanged through the rendezvous.
//
// Why an out-of-band exchange and not rdma_cm: the rendezvous is already there and every pair of
// ranks needs it anyway, so each rank publishes one key with all its queue pairs and every link
// is connected in one round, without a listening port per rank, a connection handshake per queue
// pair or rdma_cm's address resolution (the GID is the address). The cost is that RDMA links
// are made when the communicator is created, not reconnected by themselves (failover's job).
#pragma once

#include <map>
#include <memory>

#include "transport/link_protocol.hpp"
#include "transport/rdma/queue_pairs.hpp"
#include "transport/rdma/rdma_device.hpp"
#include "transport/rdma/rdma_link.hpp"

namespace hcomm::transport::rdma {

class RdmaProtocol final : public LinkProtocol {
 public:
  ProtocolCaps caps() const override;
  /// Opens the device (HCOMM_RDMA_DEVICE / HCOMM_RDMA_GID_INDEX); HCOMM_ERR_NO_DEVICE without.
  Expected<std::string> open(const ProtocolContext& context) override;
  bool reaches(int, const std::string&, const std::string& address) const override {
    return !address.empty();
  }
  Status prepare(const std::vector<PeerAddress>& peers, Rendezvous& rendezvous,
                 Rendezvous::Deadline deadline) override;
  std::unique_ptr<Link> create_link(const LinkContext& context,
                                    ProgressEngine::Clock::time_point deadline,
                                    UpCallback on_up) override;
  bool needs_offer() const override { return true; }
  /// New queue pairs for context.peer; returns their encoded endpoint.
  Expected<std::string> offer(const LinkContext& context) override;
  std::unique_ptr<Link> redial(const LinkContext& context, const std::string& peer_offer,
                               ProgressEngine::Clock::time_point deadline,
                               UpCallback on_up) override;

 private:
  QueuePairParams queue_pair_params() const;

  ProtocolContext context_;
  std::shared_ptr<RdmaDevice> device_;
  std::map<int, std::unique_ptr<QueuePairSet>> prepared_;  // by peer, not yet linked
};

}  // namespace hcomm::transport::rdma
