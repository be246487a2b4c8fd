// Shared memory as a registered protocol: reaches the ranks of this host (equal host identity),
// preferred over every other protocol there. Opening it reaps the segments of crashed runs
// before this communicator adds its own (see link_segment.hpp).
#pragma once

#include <string>

#include "transport/link_protocol.hpp"

namespace hcomm::transport::shm {

class ShmProtocol final : public LinkProtocol {
 public:
  ProtocolCaps caps() const override;
  Expected<std::string> open(const ProtocolContext& context) override;
  bool reaches(int peer, const std::string& peer_host_id,
               const std::string& address) const override;
  /// Reaps dead runs' segments (before this communicator creates its own).
  Status prepare(const std::vector<PeerAddress>& peers, Rendezvous& rendezvous,
                 Rendezvous::Deadline deadline) override;
  std::unique_ptr<Link> create_link(const LinkContext& context,
                                    ProgressEngine::Clock::time_point deadline,
                                    UpCallback on_up) override;
  /// A shared-memory link is not made again: its segment and doorbell names belong to the pair
  /// of ranks, and the medium fails only with a process (failover: the peer stays on TCP).
  bool can_redial() const override { return false; }

 private:
  std::string host_id_;
};

}  // namespace hcomm::transport::shm
