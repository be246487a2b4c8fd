#include "transport/tcp/tcp_stream.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/errno_text.hpp"
#include "core/log.hpp"

namespace hcomm::transport::tcp {
namespace {
constexpr size_t kRxBuffer = 256 * 1024;
// Below this a payload goes through the receive buffer (one recv for many small frames); above
// it, straight into its destination.
constexpr size_t kDirectThreshold = 16 * 1024;
constexpr int kMaxIov = 64;
// Reads per readiness event before other fds get their turn.
constexpr int kReadRounds = 64;
constexpr size_t kHeader = sizeof(FrameHeader);
}  // namespace

TcpStream::TcpStream(ProgressEngine& engine, int fd, StreamOwner& owner, FrameRouter& router,
                     std::string name, std::unique_ptr<TlsSession> tls)
    : engine_(engine),
      fd_(fd),
      owner_(owner),
      name_(std::move(name)),
      tls_(std::move(tls)),
      rx_(kRxBuffer),
      in_(router, kHold) {
  // TLS: the first writable event starts the handshake (failing from here would call the owner
  // before it holds this stream).
  engine_.add_fd(fd_, tls_ ? EPOLLIN | EPOLLOUT : EPOLLIN, this);
}

TcpStream::~TcpStream() {
  const Status closed{HCOMM_ERR_ABORTED, name_ + " was closed"};
  for (SendRequest* r : shut()) r->on_sent(closed);
  in_.fail(closed);
}

std::vector<SendRequest*> TcpStream::shut() {
  if (dead_) return {};
  dead_ = true;
  if (hold_timer_ != 0) engine_.cancel_timer(hold_timer_);
  hold_timer_ = 0;
  if (read_timer_ != 0) engine_.cancel_timer(read_timer_);
  read_timer_ = 0;
  engine_.remove_fd(fd_);
  ::close(fd_);
  std::vector<SendRequest*> unsent(queue_.begin(), queue_.end());
  queue_.clear();
  queued_bytes_ = 0;
  return unsent;
}

void TcpStream::enqueue(SendRequest* request) {
  if (dead_) {
    request->on_sent({HCOMM_ERR_TRANSPORT, name_ + " is closed"});
    return;
  }
  queue_.push_back(request);
  queued_bytes_ += kHeader + request->header.length;
  if (!want_write_) flush();  // else the socket is full: EPOLLOUT will flush in order
}

void TcpStream::finish_sending() {
  finish_sending_ = true;
  if (queue_.empty() && !dead_ && !handshaking()) half_close();
}

void TcpStream::half_close() {
  if (tls_) tls_->close_notify();
  shutdown(fd_, SHUT_WR);
}

void TcpStream::update_interest() {
  const uint32_t in = in_.held() ? 0u : EPOLLIN;
  const bool out = want_write_ || (tls_ && tls_->wants_write());
  if (!dead_) engine_.modify_fd(fd_, in | (out ? EPOLLOUT : 0u));
}

void TcpStream::advance_handshake() {
  switch (tls_->handshake()) {
    case TlsSession::Result::ok:
      HCOMM_LOG(debug, core::log::kNet, "%s: TLS 1.3 established", name_.c_str());
      owner_.on_stream_established();
      if (dead_) return;
      update_interest();
      flush();  // what waited for the handshake (and a half-close asked for meanwhile)
      if (!dead_) read_some();
      return;
    case TlsSession::Result::would_block:
      update_interest();
      return;
    default:
      owner_.on_stream_failed(
          {HCOMM_ERR_TRANSPORT, "the TLS handshake with " + name_ + " failed: " + tls_->error() +
                                    " (every rank needs HCOMM_TLS=1 and the same job key, or "
                                    "certificates from one CA)"},
          false);
  }
}

ssize_t TcpStream::receive(void* buf, size_t len) {
  if (!tls_) return recv(fd_, buf, len, MSG_DONTWAIT);
  size_t got = 0;
  switch (tls_->read(buf, len, &got)) {
    case TlsSession::Result::ok:
      return static_cast<ssize_t>(got);
    case TlsSession::Result::closed:
      return 0;
    case TlsSession::Result::would_block:
      if (tls_->wants_write()) update_interest();
      errno = EAGAIN;
      return -1;
    default:
      errno = tls_->socket_errno() != 0 ? tls_->socket_errno() : EPROTO;
      return -1;
  }
}

ssize_t TcpStream::transmit(const iovec* iov, int n_iov) {
  if (!tls_) {
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(iov);
    msg.msg_iovlen = static_cast<size_t>(n_iov);
    return sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  size_t put = 0;
  switch (tls_->write(iov, n_iov, &put)) {
    case TlsSession::Result::ok:
      return static_cast<ssize_t>(put);
    case TlsSession::Result::would_block:
      errno = EAGAIN;
      return -1;
    case TlsSession::Result::closed:
      errno = EPIPE;
      return -1;
    default:
      errno = tls_->socket_errno() != 0 ? tls_->socket_errno() : EPROTO;
      return -1;
  }
}

std::string TcpStream::io_error(const std::string& what, int err) const {
  if (tls_ && err == EPROTO && tls_->socket_errno() == 0) return what + " failed: " + tls_->error();
  return core::errno_text(what + " failed", err);
}

void TcpStream::flush() {
  if (handshaking()) return;  // the queue waits for the handshake
  std::vector<SendRequest*> done;
  while (!queue_.empty() && !dead_) {
    iovec iov[kMaxIov];
    int n_iov = 0;
    size_t skip = head_sent_;
    for (auto it = queue_.begin(); it != queue_.end() && n_iov + 2 <= kMaxIov; ++it) {
      SendRequest* r = *it;
      if (skip < kHeader) {
        iov[n_iov++] = {reinterpret_cast<char*>(&r->header) + skip, kHeader - skip};
        skip = 0;
      } else {
        skip -= kHeader;
      }
      if (r->header.length > skip) {
        iov[n_iov++] = {const_cast<char*>(static_cast<const char*>(r->payload)) + skip,
                        r->header.length - skip};
      }
      skip = 0;
    }
    ssize_t n = transmit(iov, n_iov);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!want_write_) {
          want_write_ = true;
          update_interest();
        }
        break;
      }
      const Status st{HCOMM_ERR_TRANSPORT, io_error("send to " + name_, errno)};
      for (auto* r : done) r->on_sent({});
      owner_.on_stream_failed(st, false);
      return;
    }
    size_t left = static_cast<size_t>(n);
    queued_bytes_ -= left;
    while (left > 0) {
      SendRequest* r = queue_.front();
      size_t total = kHeader + r->header.length;
      size_t take = std::min(left, total - head_sent_);
      head_sent_ += take;
      left -= take;
      if (head_sent_ == total) {
        done.push_back(r);
        queue_.pop_front();
        head_sent_ = 0;
      }
    }
  }
  if (queue_.empty() && want_write_) {
    want_write_ = false;
    update_interest();
  }
  if (queue_.empty() && finish_sending_ && !dead_) half_close();
  for (auto* r : done) r->on_sent({});
}

void TcpStream::on_events(int, uint32_t events) {
  if (dead_) return;
  if (handshaking()) return advance_handshake();
  if (events & EPOLLOUT) flush();
  // A TLS read may have stopped for writability (a TLS-level message to answer).
  const bool readable = events & (EPOLLIN | EPOLLHUP | EPOLLERR);
  if (!dead_ && (readable || (tls_ && (events & EPOLLOUT)))) read_some();
  // Writability TLS asked for and no longer needs: stop the events.
  if (tls_ && (events & EPOLLOUT) && !dead_ && !want_write_ && !tls_->wants_write())
    update_interest();
}

void TcpStream::read_some() {
  for (int round = 0; round < kReadRounds && !dead_; ++round) {
    if (!process_buffer()) return;
    ssize_t n;
    std::byte* direct = in_.active() && rx_begin_ == rx_end_ ? in_.target() : nullptr;
    if (direct != nullptr && in_.missing() >= kDirectThreshold) {
      n = receive(direct, std::min(in_.missing(), in_.room()));
      if (n > 0) {
        handle(in_.wrote(static_cast<size_t>(n)));
        continue;
      }
    } else {
      if (rx_begin_ > 0) {  // keep a partial header or element at the front
        std::memmove(rx_.data(), rx_.data() + rx_begin_, rx_end_ - rx_begin_);
        rx_end_ -= rx_begin_;
        rx_begin_ = 0;
      }
      n = receive(rx_.data() + rx_end_, rx_.size() - rx_end_);
      if (n > 0) {
        rx_end_ += static_cast<size_t>(n);
        continue;
      }
    }
    if (n == 0) {
      owner_.on_stream_failed({HCOMM_ERR_PEER_LOST, name_ + " closed the connection"}, true);
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    owner_.on_stream_failed({HCOMM_ERR_TRANSPORT, io_error("receive from " + name_, errno)}, false);
    return;
  }
  // Fairness: other fds get their turn; level-triggered epoll brings us back for what is still
  // in the socket, but what is already buffered must be handled now.
  if (!process_buffer() || dead_) return;
  // Decrypted bytes TLS holds are not in the socket: epoll would not bring us back for them.
  if (tls_ && tls_->has_pending() && read_timer_ == 0) {
    read_timer_ = engine_.add_timer(ProgressEngine::Clock::now(), [this] {
      read_timer_ = 0;
      if (!dead_) read_some();
    });
  }
}

bool TcpStream::process_buffer() {
  while (!dead_) {
    if (in_.held()) return false;
    const size_t avail = rx_end_ - rx_begin_;
    if (!in_.active()) {
      if (avail < kHeader) return true;
      FrameHeader h;
      std::memcpy(&h, rx_.data() + rx_begin_, kHeader);
      rx_begin_ += kHeader;
      if (h.magic != FrameHeader::kMagic || h.version != FrameHeader::kVersion) {
        owner_.on_stream_failed({HCOMM_ERR_TRANSPORT, "protocol error on " + name_ +
                                                          ": bad frame magic (not an hcomm peer, "
                                                          "or a different hcomm version?)"},
                                false);
        return false;
      }
      if (h.length > kMaxFrameBytes) {
        owner_.on_stream_failed(
            {HCOMM_ERR_TRANSPORT, "protocol error on " + name_ + ": a frame of " +
                                      std::to_string(h.length) + " bytes, above the limit"},
            false);
        return false;
      }
      HCOMM_LOG(trace, core::log::kNet, "%s: frame kind %u op %llu step %u chunk %u, %llu bytes",
                name_.c_str(), h.kind, static_cast<unsigned long long>(h.op_seq), h.step, h.chunk,
                static_cast<unsigned long long>(h.length));
      const IncomingFrame::Event event = in_.begin(h);
      if (in_.held()) {
        hold();
        return false;
      }
      handle(event);
      continue;
    }
    const size_t remaining = in_.missing();
    size_t take = std::min(avail, remaining);
    std::byte* dst = in_.target();
    if (dst != nullptr) take = std::min(take, in_.room());
    if (dst == nullptr && take < remaining) take -= take % in_.granularity();
    if (take == 0 && remaining > 0) return true;
    const std::byte* data = rx_.data() + rx_begin_;
    rx_begin_ += take;
    if (dst != nullptr) {
      std::memcpy(dst, data, take);
      handle(in_.wrote(take));
    } else {
      handle(in_.add(data, take));
    }
  }
  return false;
}

void TcpStream::handle(IncomingFrame::Event event) {
  if (event == IncomingFrame::Event::goodbye) owner_.on_goodbye();
}

void TcpStream::hold() {
  update_interest();
  hold_timer_ = engine_.add_timer(in_.hold_deadline(), [this] {
    hold_timer_ = 0;
    if (dead_ || !in_.held()) return;
    HCOMM_LOG(debug, core::log::kNet, "%s: no receive for op %llu step %u chunk %u within the hold",
              name_.c_str(), static_cast<unsigned long long>(in_.header().op_seq),
              in_.header().step, in_.header().chunk);
    in_.release_hold();
    resume();
  });
}

void TcpStream::resume() {
  if (dead_) return;
  if (hold_timer_ != 0) engine_.cancel_timer(hold_timer_);
  hold_timer_ = 0;
  update_interest();
  read_some();
}

}  // namespace hcomm::transport::tcp
