// TCP as a registered protocol: reaches every rank, the fallback of every other protocol. Its
// address is the communicator's listening endpoint; the higher rank of a pair connects, the lower
// one accepts (TcpListener routes the connection to its TcpLink). With HCOMM_TLS=1 its links are
// encrypted (tls_context.hpp).
#pragma once

#include <memory>

#include "transport/link_protocol.hpp"
#include "transport/tcp/tcp_listener.hpp"
#include "transport/tcp/tls_context.hpp"

namespace hcomm::transport::tcp {

class TcpProtocol final : public LinkProtocol {
 public:
  ProtocolCaps caps() const override;
  Expected<std::string> open(const ProtocolContext& context) override;
  bool reaches(int, const std::string&, const std::string&) const override { return true; }
  std::unique_ptr<Link> create_link(const LinkContext& context,
                                    ProgressEngine::Clock::time_point deadline,
                                    UpCallback on_up) override;
  void shutdown() override { listener_.reset(); }

 private:
  std::unique_ptr<TcpListener> listener_;
  std::shared_ptr<const core::JobKey> key_;
  std::shared_ptr<const TlsContext> tls_;  // HCOMM_TLS=1 (null: plain TCP)
  bool listening_ = false;
};

}  // namespace hcomm::transport::tcp
