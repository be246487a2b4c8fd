// A communicator's listening socket: accepts the connections of higher ranks, reads their Hello
// and hands each to the TcpLink of that rank (parking it until that link exists). Engine thread
// only, except bind(), which runs on the creating thread before the address is published.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/auth_handshake.hpp"
#include "transport/progress_engine.hpp"
#include "transport/tcp/tcp_link.hpp"

namespace hcomm::transport::tcp {

class TcpListener final : public FdHandler {
 public:
  /// Binds `host`:0 and listens. The returned listener is not yet polled: call start().
  /// `key` non-null: every connection must pass the job-key handshake (core/auth_handshake.hpp)
  /// before its Hello is read; one that fails, or has not sent its Hello within
  /// kHandshakeTimeout, is closed and logged once per address.
  static Expected<std::unique_ptr<TcpListener>> bind(ProgressEngine& engine,
                                                     const std::string& host, uint64_t comm_uid,
                                                     int world_size,
                                                     std::shared_ptr<const core::JobKey> key);
  static constexpr std::chrono::milliseconds kHandshakeTimeout{5000};
  /// Connections in their handshake at once; one more is closed at accept.
  static constexpr size_t kMaxHandshaking = 256;
  ~TcpListener();
  /// "a.b.c.d:port": what peers connect to.
  const std::string& endpoint() const { return endpoint_; }
  void start();
  /// Connections from `link->peer()` go to `link` from now on (including parked ones).
  void route(int peer, TcpLink* link);
  /// `link` is going away: later connections from `peer` wait for the next route().
  void unroute(int peer, const TcpLink* link);
  void on_events(int fd, uint32_t events) override;

 private:
  TcpListener(ProgressEngine& engine, int fd, std::string endpoint, uint64_t comm_uid,
              int world_size, std::shared_ptr<const core::JobKey> key);
  void accept_all();
  void read_hello(int fd);
  void drop(int fd, const std::string& why);

  struct Pending {
    std::string remote;                         ///< "ip:port", for log lines
    std::unique_ptr<core::AuthHandshake> auth;  ///< running handshake (null: none or done)
    ProgressEngine::TimerId timer = 0;
    Hello hello;
    size_t got = 0;
  };
  /// Feeds the handshake of `p`; true once it is done (false: still running, or `fd` dropped).
  bool authenticate(int fd, Pending& p);
  ProgressEngine& engine_;
  int fd_;
  std::string endpoint_;
  uint64_t comm_uid_;
  int world_size_;
  std::shared_ptr<const core::JobKey> key_;
  std::map<int, Pending> handshaking_;                // accepted fd → hello bytes so far
  std::map<int, TcpLink*> routes_;                    // peer rank → link
  std::multimap<int, std::pair<int, Hello>> parked_;  // peer rank → (fd, hello)
};

}  // namespace hcomm::transport::tcp
