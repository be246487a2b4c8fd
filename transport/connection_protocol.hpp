// An application's protocol (hcomm::Protocol, hcomm/protocol.hpp) as hcomm's LinkProtocol: its
// Connections are made in prepare() — on the creating thread, in rank order, as the public
// contract says — and each becomes a ConnectionLink on the engine thread. A Connection is made
// once per communicator: links over it cannot be made again (failover keeps such a peer on its
// fallback after a fault). With a job key, every Connection runs the job-key handshake
// (connection_auth.hpp) in prepare(), before any frame.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/job_key.hpp"
#include "hcomm/protocol.hpp"
#include "transport/link_protocol.hpp"

namespace hcomm::transport {

class ConnectionProtocol final : public LinkProtocol {
 public:
  /// `name`: the registered name, for link names and errors.
  ConnectionProtocol(std::string name, std::unique_ptr<Protocol> protocol);

  ProtocolCaps caps() const override { return protocol_->caps(); }
  Expected<std::string> open(const ProtocolContext& context) override;
  bool reaches(int peer, const std::string& peer_host_id,
               const std::string& address) const override {
    return protocol_->reaches(peer, peer_host_id, address);
  }
  /// Connects to every peer in `peers` by `deadline`.
  Status prepare(const std::vector<PeerAddress>& peers, Rendezvous& rendezvous,
                 Rendezvous::Deadline deadline) override;
  /// A ConnectionLink over the Connection prepare() made to context.peer.
  std::unique_ptr<Link> create_link(const LinkContext& context,
                                    ProgressEngine::Clock::time_point deadline,
                                    UpCallback on_up) override;
  bool can_redial() const override { return false; }

 private:
  std::string name_;
  std::unique_ptr<Protocol> protocol_;
  std::shared_ptr<const core::JobKey> key_;  // null: the job runs unauthenticated
  int rank_ = 0;
  std::map<int, std::unique_ptr<Connection>> connections_;  // by peer, made, not yet linked
};

}  // namespace hcomm::transport
