// A communicator's listening socket: accepts the connections of higher ranks, reads their Hello
// and hands each to the TcpLink of that rank (parking it until that link exists). Engine thread
// only, except bind(), which runs on the creating thread before the address is published.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/progress_engine.hpp"
#include "transport/tcp/tcp_link.hpp"

namespace hcomm::transport::tcp {

class TcpListener final : public FdHandler {
 public:
  /// Binds `host`:0 and listens. The returned listener is not yet polled: call start().
  static Expected<std::unique_ptr<TcpListener>> bind(ProgressEngine& engine,
                                                     const std::string& host, uint64_t comm_uid,
                                                     int world_size);
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
              int world_size);
  void accept_all();
  void read_hello(int fd);
  void drop(int fd, const char* why);

  struct Pending {
    Hello hello;
    size_t got = 0;
  };
  ProgressEngine& engine_;
  int fd_;
  std::string endpoint_;
  uint64_t comm_uid_;
  int world_size_;
  std::map<int, Pending> handshaking_;                // accepted fd → hello bytes so far
  std::map<int, TcpLink*> routes_;                    // peer rank → link
  std::multimap<int, std::pair<int, Hello>> parked_;  // peer rank → (fd, hello)
};

}  // namespace hcomm::transport::tcp
