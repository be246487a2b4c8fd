#include "transport/tcp/tcp_listener.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.hpp"

namespace hcomm::transport::tcp {

Expected<std::unique_ptr<TcpListener>> TcpListener::bind(ProgressEngine& engine,
                                                         const std::string& host, uint64_t comm_uid,
                                                         int world_size,
                                                         std::shared_ptr<const core::JobKey> key) {
  sockaddr_in addr{};
  if (!parse_ipv4_endpoint(host + ":1", &addr))
    return Status{HCOMM_ERR_INVALID_ARG, "listen address '" + host + "' is not an IPv4 address"};
  addr.sin_port = 0;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status{HCOMM_ERR_TRANSPORT, std::string("socket(): ") + strerror(errno)};
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 128) != 0) {
    Status st{HCOMM_ERR_TRANSPORT,
              "cannot listen on " + host + ": " + strerror(errno) + " (check HCOMM_SOCKET_IFNAME)"};
    ::close(fd);
    return st;
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return std::unique_ptr<TcpListener>(
      new TcpListener(engine, fd, endpoint_string(addr), comm_uid, world_size, std::move(key)));
}

TcpListener::TcpListener(ProgressEngine& engine, int fd, std::string endpoint, uint64_t comm_uid,
                         int world_size, std::shared_ptr<const core::JobKey> key)
    : engine_(engine),
      fd_(fd),
      endpoint_(std::move(endpoint)),
      comm_uid_(comm_uid),
      world_size_(world_size),
      key_(std::move(key)) {}

TcpListener::~TcpListener() {
  engine_.remove_fd(fd_);
  ::close(fd_);
  for (auto& [fd, p] : handshaking_) {
    engine_.cancel_timer(p.timer);
    engine_.remove_fd(fd);
    ::close(fd);
  }
  for (auto& [rank, parked] : parked_) ::close(parked.first);
}

void TcpListener::start() {
  engine_.add_fd(fd_, EPOLLIN, this);
}

void TcpListener::route(int peer, TcpLink* link) {
  routes_[peer] = link;
  auto range = parked_.equal_range(peer);
  std::vector<std::pair<int, Hello>> ready;
  for (auto it = range.first; it != range.second; ++it) ready.push_back(it->second);
  parked_.erase(range.first, range.second);
  for (auto& [fd, hello] : ready)
    if (!link->adopt(fd, hello)) ::close(fd);
}

void TcpListener::unroute(int peer, const TcpLink* link) {
  auto it = routes_.find(peer);
  if (it != routes_.end() && it->second == link) routes_.erase(it);
}

void TcpListener::on_events(int fd, uint32_t) {
  if (fd == fd_) return accept_all();
  read_hello(fd);
}

void TcpListener::accept_all() {
  for (;;) {
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    int fd = accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        HCOMM_LOG(warn, core::log::kNet, "accept on %s: %s", endpoint_.c_str(), strerror(errno));
      return;
    }
    const std::string remote = endpoint_string(peer);
    if (handshaking_.size() >= kMaxHandshaking) {
      core::log_refused_connection(
          endpoint_.c_str(), remote,
          std::to_string(handshaking_.size()) + " connections are in their handshake (a flood?)");
      ::close(fd);
      continue;
    }
    HCOMM_LOG(debug, core::log::kNet, "accepted %s on %s", remote.c_str(), endpoint_.c_str());
    Pending& p = handshaking_[fd];
    p.remote = remote;
    p.timer = engine_.add_timer(ProgressEngine::Clock::now() + kHandshakeTimeout, [this, fd] {
      auto it = handshaking_.find(fd);
      if (it == handshaking_.end()) return;
      it->second.timer = 0;
      drop(fd, "it did not complete its hello within " + std::to_string(kHandshakeTimeout.count()) +
                   " ms");
    });
    if (key_) {
      p.auth = std::make_unique<core::AuthHandshake>(key_, core::AuthHandshake::Role::acceptor);
      // A 40-byte write into a fresh connection's empty send buffer cannot be short.
      const std::string& out = p.auth->output();
      if (send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
        engine_.cancel_timer(p.timer);
        handshaking_.erase(fd);
        ::close(fd);
        continue;
      }
      p.auth->output().clear();
    }
    engine_.add_fd(fd, EPOLLIN, this);
  }
}

void TcpListener::drop(int fd, const std::string& why) {
  auto it = handshaking_.find(fd);
  if (it != handshaking_.end()) {
    core::log_refused_connection(endpoint_.c_str(), it->second.remote, why);
    if (it->second.timer != 0) engine_.cancel_timer(it->second.timer);
    handshaking_.erase(it);
  }
  engine_.remove_fd(fd);
  ::close(fd);
}

bool TcpListener::authenticate(int fd, Pending& p) {
  while (!p.auth->done()) {
    uint8_t buf[core::AuthHandshake::kGreetingBytes];
    ssize_t n = recv(fd, buf, std::min(sizeof(buf), p.auth->wanted()), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    if (n <= 0) {
      drop(fd, "it closed the connection before authenticating");
      return false;
    }
    p.auth->feed(buf, static_cast<size_t>(n));
    if (p.auth->failed()) {
      drop(fd, p.auth->failure());
      return false;
    }
    std::string& out = p.auth->output();
    if (!out.empty() &&
        send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
      drop(fd, "sending the handshake's proof failed");
      return false;
    }
    out.clear();
  }
  p.auth.reset();
  return true;
}

void TcpListener::read_hello(int fd) {
  auto it = handshaking_.find(fd);
  if (it == handshaking_.end()) return;
  Pending& p = it->second;
  if (p.auth && !authenticate(fd, p)) return;
  ssize_t n =
      recv(fd, reinterpret_cast<char*>(&p.hello) + p.got, sizeof(Hello) - p.got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) return drop(fd, "closed before its hello");
  p.got += static_cast<size_t>(n);
  if (!key_ && p.got >= 4 &&
      core::AuthHandshake::is_greeting(reinterpret_cast<const uint8_t*>(&p.hello)))
    return drop(fd,
                "it authenticates with a job key and this rank has none: give every rank "
                "the same HCOMM_JOB_KEY");
  if (p.got < sizeof(Hello)) return;
  Hello hello = p.hello;
  if (hello.magic != Hello::kMagic || hello.version != Hello::kVersion)
    return drop(fd, "not an hcomm peer of this version");
  if (hello.comm_uid != comm_uid_) return drop(fd, "hello for another communicator or job");
  if (hello.rank < 0 || hello.rank >= world_size_)
    return drop(fd, "hello with a rank out of range");
  engine_.remove_fd(fd);
  engine_.cancel_timer(p.timer);
  handshaking_.erase(it);
  auto route = routes_.find(hello.rank);
  if (route == routes_.end()) {
    parked_.emplace(hello.rank, std::make_pair(fd, hello));
    return;
  }
  if (!route->second->adopt(fd, hello)) parked_.emplace(hello.rank, std::make_pair(fd, hello));
}

}  // namespace hcomm::transport::tcp
