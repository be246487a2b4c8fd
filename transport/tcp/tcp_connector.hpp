// Opens one stream of a TcpLink: non-blocking connect (retried while the peer's listener refuses,
// until the deadline), the job-key handshake when the job has a key, then the Hello exchange.
// Engine thread only.
#pragma once

#include <netinet/in.h>

#include <functional>
#include <memory>
#include <string>

#include "core/auth_handshake.hpp"
#include "transport/progress_engine.hpp"
#include "transport/tcp/tcp_socket.hpp"

namespace hcomm::transport::tcp {

class TcpConnector final : public FdHandler {
 public:
  /// fd >= 0 and the peer's Hello on success; fd = -1 and the reason otherwise. Called once.
  using Done = std::function<void(int fd, const Hello& peer_hello, const Status& status)>;

  /// `key` null: no handshake (the job runs unauthenticated).
  TcpConnector(ProgressEngine& engine, sockaddr_in peer, std::string peer_name, Hello hello,
               SocketOptions options, std::shared_ptr<const core::JobKey> key,
               ProgressEngine::Clock::time_point deadline, Done done);
  ~TcpConnector();
  void start();
  void on_events(int fd, uint32_t events) override;

 private:
  void attempt();
  void retry_later(const std::string& why);
  void finish(const Status& status);
  /// Feeds the handshake what arrived; false when it still runs or failed (then finished).
  bool authenticate();
  bool send_all(const void* data, size_t size);

  ProgressEngine& engine_;
  sockaddr_in peer_;
  std::string peer_name_;
  Hello hello_;
  SocketOptions options_;
  std::shared_ptr<const core::JobKey> key_;
  std::unique_ptr<core::AuthHandshake> auth_;
  ProgressEngine::Clock::time_point deadline_;
  Done done_;
  int fd_ = -1;
  bool connected_ = false;
  bool finished_ = false;
  Hello reply_;
  size_t reply_got_ = 0;
  ProgressEngine::TimerId timer_ = 0;
};

}  // namespace hcomm::transport::tcp
