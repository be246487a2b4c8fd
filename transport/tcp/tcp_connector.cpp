#include "transport/tcp/tcp_connector.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.hpp"

namespace hcomm::transport::tcp {
namespace {
constexpr auto kRetryDelay = std::chrono::milliseconds(50);
}

TcpConnector::TcpConnector(ProgressEngine& engine, sockaddr_in peer, std::string peer_name,
                           Hello hello, SocketOptions options,
                           ProgressEngine::Clock::time_point deadline, Done done)
    : engine_(engine),
      peer_(peer),
      peer_name_(std::move(peer_name)),
      hello_(hello),
      options_(options),
      deadline_(deadline),
      done_(std::move(done)) {}

TcpConnector::~TcpConnector() {
  if (timer_ != 0) engine_.cancel_timer(timer_);
  if (fd_ >= 0) {
    engine_.remove_fd(fd_);
    ::close(fd_);
  }
}

void TcpConnector::start() {
  attempt();
}

void TcpConnector::attempt() {
  timer_ = 0;
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return finish({HCOMM_ERR_TRANSPORT, std::string("socket(): ") + strerror(errno)});
  Status st = configure_socket(fd_, options_);
  if (!st.ok()) return finish(st);
  connected_ = false;
  reply_got_ = 0;
  int rc = ::connect(fd_, reinterpret_cast<const sockaddr*>(&peer_), sizeof(peer_));
  if (rc != 0 && errno != EINPROGRESS) return retry_later(strerror(errno));
  engine_.add_fd(fd_, EPOLLOUT, this);
}

void TcpConnector::retry_later(const std::string& why) {
  if (fd_ >= 0) {
    engine_.remove_fd(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  if (ProgressEngine::Clock::now() + kRetryDelay >= deadline_)
    return finish({HCOMM_ERR_TIMEOUT, "could not connect to " + peer_name_ + " (" + why +
                                          ") before the connect deadline: check that the rank "
                                          "is running and reachable (HCOMM_SOCKET_IFNAME, "
                                          "firewall), or raise HCOMM_CONNECT_TIMEOUT_MS"});
  HCOMM_LOG(debug, core::log::kNet, "connect to %s: %s, retrying", peer_name_.c_str(), why.c_str());
  timer_ = engine_.add_timer(ProgressEngine::Clock::now() + kRetryDelay, [this] { attempt(); });
}

void TcpConnector::on_events(int, uint32_t events) {
  if (finished_) return;
  if (!connected_) {
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0 || (events & EPOLLERR))
      return retry_later(strerror(err != 0 ? err : ECONNREFUSED));
    connected_ = true;
    // A 32-byte write into a fresh connection's empty send buffer cannot be short.
    if (send(fd_, &hello_, sizeof(hello_), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(hello_)))
      return retry_later(std::string("sending hello: ") + strerror(errno));
    engine_.modify_fd(fd_, EPOLLIN);
    return;
  }
  ssize_t n = recv(fd_, reinterpret_cast<char*>(&reply_) + reply_got_, sizeof(reply_) - reply_got_,
                   MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0)
    return finish({HCOMM_ERR_TRANSPORT, peer_name_ + " closed the connection during the hello "
                                                     "(a different job or communicator?)"});
  reply_got_ += static_cast<size_t>(n);
  if (reply_got_ < sizeof(reply_)) return;
  if (reply_.magic != Hello::kMagic || reply_.version != Hello::kVersion ||
      reply_.comm_uid != hello_.comm_uid)
    return finish({HCOMM_ERR_TRANSPORT, peer_name_ + " answered with a foreign hello: another "
                                                     "job listens there"});
  engine_.remove_fd(fd_);
  int fd = fd_;
  fd_ = -1;
  finished_ = true;
  done_(fd, reply_, {});
}

void TcpConnector::finish(const Status& status) {
  if (finished_) return;
  finished_ = true;
  if (fd_ >= 0) {
    engine_.remove_fd(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  done_(-1, Hello{}, status);
}

}  // namespace hcomm::transport::tcp
