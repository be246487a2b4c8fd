#include "transport/tcp/tcp_protocol.hpp"

#include <mutex>

#include "core/log.hpp"

namespace hcomm::transport::tcp {

ProtocolCaps TcpProtocol::caps() const {
  ProtocolCaps c;
  c.max_message_bytes = SIZE_MAX;
  c.detects_peer_failure = true;  // EOF, RST
  return c;
}

Expected<std::string> TcpProtocol::open(const ProtocolContext& context) {
  auto key = core::JobKey::from_environment();
  if (!key.ok()) return key.status();
  key_ = key.value();
  auto tls = TlsContext::from_environment(key_);
  if (!tls.ok()) return tls.status();
  tls_ = tls.value();
  static std::once_flag told;
  if (tls_)
    std::call_once(told, [this] {
      HCOMM_LOG(info, core::log::kNet, "TCP links are encrypted with TLS 1.3 (keys: %s)",
                tls_->keys());
    });
  auto listener =
      TcpListener::bind(*engine_, context.interface_ip, context.comm_uid, context.world_size, key_);
  if (!listener.ok()) return listener.status();
  listener_ = std::move(listener.value());
  return listener_->endpoint();
}

std::unique_ptr<Link> TcpProtocol::create_link(const LinkContext& context,
                                               ProgressEngine::Clock::time_point deadline,
                                               UpCallback on_up) {
  if (!listening_) {
    listener_->start();
    listening_ = true;
  }
  TcpLinkParams p;
  p.comm_uid = context.comm_uid;
  p.world_size = context.world_size;
  p.peer_endpoint = context.peer_address;
  p.num_streams = config_.sockets_per_peer;
  p.socket_options = {config_.send_buf_size, config_.recv_buf_size, config_.tcp_congestion,
                      traffic_class_};
  p.generation = context.generation;
  p.key = key_;
  p.tls = tls_;
  if (context.my_rank < context.peer) p.listener = listener_.get();
  MediumLink::Identity id{context.my_rank, context.peer, context.comm_id, context.bytes_sent};
  auto link = std::make_unique<TcpLink>(*engine_, *context.observer, id, p, std::move(on_up));
  // The higher rank connects, the lower one accepts: exactly one connection set per pair.
  if (context.my_rank > context.peer) {
    link->connect(deadline);
  } else {
    link->expect(deadline);
    listener_->route(context.peer, link.get());
  }
  return link;
}

}  // namespace hcomm::transport::tcp
