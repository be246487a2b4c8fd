#include "transport/connection_protocol.hpp"

#include "transport/connection_auth.hpp"
#include "transport/connection_link.hpp"

namespace hcomm::transport {

ConnectionProtocol::ConnectionProtocol(std::string name, std::unique_ptr<Protocol> protocol)
    : name_(std::move(name)), protocol_(std::move(protocol)) {}

Expected<std::string> ConnectionProtocol::open(const ProtocolContext& context) {
  auto key = core::JobKey::from_environment();
  if (!key.ok()) return key.status();
  key_ = key.value();
  rank_ = context.rank;
  return protocol_->open(context);
}

Status ConnectionProtocol::prepare(const std::vector<PeerAddress>& peers, Rendezvous&,
                                   Rendezvous::Deadline deadline) {
  for (const PeerAddress& peer : peers) {
    auto connection = protocol_->connect(peer.rank, peer.address, deadline);
    if (!connection.ok())
      return {connection.status().code(), name_ + ": connecting to rank " +
                                              std::to_string(peer.rank) + ": " +
                                              connection.status().message()};
    connections_[peer.rank] = std::move(connection.value());
  }
  if (!key_) return {};
  return authenticate_connections(name_, rank_, key_, connections_, deadline);
}

std::unique_ptr<Link> ConnectionProtocol::create_link(const LinkContext& context,
                                                      ProgressEngine::Clock::time_point,
                                                      UpCallback on_up) {
  std::unique_ptr<Connection> connection;
  auto it = connections_.find(context.peer);
  if (it != connections_.end()) {
    connection = std::move(it->second);
    connections_.erase(it);
  }
  MediumLink::Identity id{context.my_rank, context.peer, context.comm_id, context.bytes_sent};
  auto link = std::make_unique<ConnectionLink>(*context.engine, *context.observer, id,
                                               std::move(connection), protocol_->caps(), name_);
  on_up(link->error());
  return link;
}

}  // namespace hcomm::transport
