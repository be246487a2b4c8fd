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
                           std::shared_ptr<const core::JobKey> key,
                           ProgressEngine::Clock::time_point deadline, Done done)
    : engine_(engine),
      peer_(peer),
      peer_name_(std::move(peer_name)),
      hello_(hello),
      options_(options),
      key_(std::move(key)),
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
  auth_.reset();
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
    if (key_) {
      auth_ = std::make_unique<core::AuthHandshake>(key_, core::AuthHandshake::Role::connector);
      if (!send_all(auth_->output().data(), auth_->output().size()))
        return retry_later(std::string("sending the job-key greeting: ") + strerror(errno));
      auth_->output().clear();
    } else if (!send_all(&hello_, sizeof(hello_))) {
      return retry_later(std::string("sending hello: ") + strerror(errno));
    }
    engine_.modify_fd(fd_, EPOLLIN);
    return;
  }
  if (auth_ && !authenticate()) return;
  ssize_t n = recv(fd_, reinterpret_cast<char*>(&reply_) + reply_got_, sizeof(reply_) - reply_got_,
                   MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0)
    return finish({HCOMM_ERR_TRANSPORT, peer_name_ + " closed the connection during the hello "
                                                     "(a different job or communicator?)"});
  if (!key_ && reply_got_ == 0 && n >= 4 &&
      core::AuthHandshake::is_greeting(reinterpret_cast<const uint8_t*>(&reply_)))
    return finish({HCOMM_ERR_TRANSPORT, peer_name_ + " requires a job key and this rank has "
                                                     "none: give every rank the same "
                                                     "HCOMM_JOB_KEY"});
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

bool TcpConnector::send_all(const void* data, size_t size) {
  // The handshake's and hello's few dozen bytes go into a connection whose send buffer holds
  // nothing else: a short write does not happen.
  return send(fd_, data, size, MSG_NOSIGNAL) == static_cast<ssize_t>(size);
}

bool TcpConnector::authenticate() {
  while (!auth_->done()) {
    uint8_t buf[core::AuthHandshake::kGreetingBytes];
    ssize_t n = recv(fd_, buf, std::min(sizeof(buf), auth_->wanted()), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    if (n <= 0) {
      finish({HCOMM_ERR_TRANSPORT,
              peer_name_ + " closed the connection during the job-key handshake: it runs "
                           "without HCOMM_JOB_KEY or with another one"});
      return false;
    }
    auth_->feed(buf, static_cast<size_t>(n));
    if (auth_->failed()) {
      finish(
          {HCOMM_ERR_TRANSPORT, peer_name_ + " failed the job-key handshake: " + auth_->failure()});
      return false;
    }
    if (!auth_->output().empty() && !send_all(auth_->output().data(), auth_->output().size())) {
      finish({HCOMM_ERR_TRANSPORT, "sending the job-key proof to " + peer_name_ + " failed"});
      return false;
    }
    auth_->output().clear();
  }
  auth_.reset();
  if (!send_all(&hello_, sizeof(hello_))) {
    finish({HCOMM_ERR_TRANSPORT, "sending the hello to " + peer_name_ + " failed"});
    return false;
  }
  return false;  // the reply Hello comes with a later readiness
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
