#include "transport/tcp/tcp_stream.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/log.hpp"

namespace hcomm::transport::tcp {
namespace {
constexpr size_t kRxBuffer = 256 * 1024;
// Below this a payload goes through the receive buffer (one recv for many small frames); above
// it, straight into its destination.
constexpr size_t kDirectThreshold = 16 * 1024;
constexpr size_t kMaxControlPayload = 64 * 1024;
// Frames at least this large that arrive before their receive are held in the socket (hold()),
// for at most kHoldFor.
constexpr size_t kHoldThreshold = 64 * 1024;
constexpr auto kHoldFor = std::chrono::microseconds(200);
constexpr int kMaxIov = 64;
constexpr size_t kHeader = sizeof(FrameHeader);
}  // namespace

TcpStream::TcpStream(ProgressEngine& engine, int fd, StreamOwner& owner, std::string name)
    : engine_(engine), fd_(fd), owner_(owner), name_(std::move(name)), rx_(kRxBuffer) {
  engine_.add_fd(fd_, EPOLLIN, this);
}

TcpStream::~TcpStream() {
  Status closed{HCOMM_ERR_ABORTED, "connection closed"};
  shut(closed, closed);
}

void TcpStream::shut(const Status& status, const Status& send_status) {
  if (dead_) return;
  dead_ = true;
  if (hold_timer_ != 0) engine_.cancel_timer(hold_timer_);
  hold_timer_ = 0;
  engine_.remove_fd(fd_);
  close(fd_);
  std::deque<SendRequest*> failed;
  failed.swap(queue_);
  queued_bytes_ = 0;
  RecvRequest* in_progress =
      (target_ == Target::direct || target_ == Target::pieces) ? request_ : nullptr;
  target_ = Target::none;
  request_ = nullptr;
  for (auto* r : failed) r->on_sent(send_status);
  if (in_progress != nullptr) in_progress->on_received(status);
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
  if (queue_.empty() && !dead_) shutdown(fd_, SHUT_WR);
}

void TcpStream::update_interest() {
  const uint32_t in = target_ == Target::held ? 0u : EPOLLIN;
  if (!dead_) engine_.modify_fd(fd_, in | (want_write_ ? EPOLLOUT : 0u));
}

void TcpStream::flush() {
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
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n_iov);
    ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!want_write_) {
          want_write_ = true;
          update_interest();
        }
        break;
      }
      Status st{HCOMM_ERR_TRANSPORT, "send to " + name_ + " failed: " + strerror(errno)};
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
  if (queue_.empty() && finish_sending_ && !dead_) shutdown(fd_, SHUT_WR);
  for (auto* r : done) r->on_sent({});
}

void TcpStream::on_events(int, uint32_t events) {
  if (dead_) return;
  if (events & EPOLLOUT) flush();
  if (!dead_ && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) read_some();
}

void TcpStream::read_some() {
  for (int round = 0; round < 64 && !dead_; ++round) {
    if (!process_buffer()) return;
    ssize_t n;
    size_t remaining = in_payload_ ? header_.length - payload_done_ : 0;
    bool direct_capable = target_ == Target::direct || target_ == Target::unexpected;
    if (in_payload_ && direct_capable && rx_begin_ == rx_end_ && remaining >= kDirectThreshold) {
      std::byte* dst = target_ == Target::direct ? direct_ : unexpected_.data();
      n = recv(fd_, dst + payload_done_, remaining, MSG_DONTWAIT);
      if (n > 0) {
        payload_done_ += static_cast<size_t>(n);
        if (payload_done_ == header_.length) finish_payload();
        continue;
      }
    } else {
      if (rx_begin_ > 0) {  // keep a partial header or element at the front
        std::memmove(rx_.data(), rx_.data() + rx_begin_, rx_end_ - rx_begin_);
        rx_end_ -= rx_begin_;
        rx_begin_ = 0;
      }
      n = recv(fd_, rx_.data() + rx_end_, rx_.size() - rx_end_, MSG_DONTWAIT);
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
    owner_.on_stream_failed(
        {HCOMM_ERR_TRANSPORT, "receive from " + name_ + " failed: " + strerror(errno)}, false);
    return;
  }
  // Fairness: other fds get their turn; level-triggered epoll brings us back for what is still
  // in the socket, but what is already buffered must be handled now.
  process_buffer();
}

bool TcpStream::process_buffer() {
  while (!dead_) {
    if (target_ == Target::held) return false;
    size_t avail = rx_end_ - rx_begin_;
    if (!in_payload_) {
      if (avail < kHeader) return true;
      std::memcpy(&header_, rx_.data() + rx_begin_, kHeader);
      rx_begin_ += kHeader;
      if ((header_.magic != FrameHeader::kMagic || header_.version != FrameHeader::kVersion)) {
        owner_.on_stream_failed({HCOMM_ERR_TRANSPORT, "protocol error on " + name_ +
                                                          ": bad frame magic (not an hcomm peer, "
                                                          "or a different hcomm version?)"},
                                false);
        return false;
      }
      HCOMM_LOG(trace, core::log::kNet, "%s: frame kind %u op %llu step %u chunk %u, %llu bytes",
                name_.c_str(), header_.kind, static_cast<unsigned long long>(header_.op_seq),
                header_.step, header_.chunk, static_cast<unsigned long long>(header_.length));
      in_payload_ = true;
      payload_done_ = 0;
      start_payload();
      continue;
    }
    size_t remaining = header_.length - payload_done_;
    size_t take = std::min(avail, remaining);
    if (target_ == Target::pieces && take < remaining) {
      size_t g = request_->piece_granularity();
      take -= take % g;
    }
    if (take == 0 && remaining > 0) return true;
    deliver(rx_.data() + rx_begin_, take);
    rx_begin_ += take;
    payload_done_ += take;
    if (payload_done_ == header_.length) finish_payload();
  }
  return false;
}

void TcpStream::start_payload() {
  request_ = nullptr;
  auto kind = static_cast<FrameKind>(header_.kind);
  if (kind == FrameKind::abort || kind == FrameKind::close || kind == FrameKind::channel) {
    target_ = header_.length <= kMaxControlPayload ? Target::control : Target::discard;
    control_.clear();
  } else if (owner_.drop(header_)) {
    target_ = Target::discard;
  } else if (RecvRequest* r = owner_.match(header_)) {
    take(r);
  } else if (header_.length >= kHoldThreshold) {
    hold();
  } else {
    target_ = Target::unexpected;
    unexpected_ = owner_.take_payload(header_.length);
  }
  if (header_.length == 0) finish_payload();
}

void TcpStream::take(RecvRequest* r) {
  Status st = r->accept(header_);
  if (!st.ok()) {
    target_ = Target::discard;
    r->on_received(st);
  } else {
    request_ = r;
    direct_ = static_cast<std::byte*>(r->destination());
    target_ = direct_ != nullptr ? Target::direct : Target::pieces;
  }
}

void TcpStream::hold() {
  target_ = Target::held;
  update_interest();
  hold_timer_ = engine_.add_timer(ProgressEngine::Clock::now() + kHoldFor, [this] {
    hold_timer_ = 0;
    stop_holding();
  });
}

void TcpStream::stop_holding() {
  if (dead_ || target_ != Target::held) return;
  HCOMM_LOG(debug, core::log::kNet, "%s: no receive for op %llu step %u chunk %u within the hold",
            name_.c_str(), static_cast<unsigned long long>(header_.op_seq), header_.step,
            header_.chunk);
  target_ = Target::unexpected;
  unexpected_ = owner_.take_payload(header_.length);
  resume();
}

bool TcpStream::claim(RecvRequest* request) {
  if (dead_ || target_ != Target::held || !(MatchKey::of(header_) == request->key)) return false;
  engine_.cancel_timer(hold_timer_);
  hold_timer_ = 0;
  take(request);
  resume();
  return true;
}

void TcpStream::resume() {
  update_interest();
  read_some();
}

void TcpStream::deliver(const std::byte* data, size_t bytes) {
  switch (target_) {
    case Target::direct:
      std::memcpy(direct_ + payload_done_, data, bytes);
      break;
    case Target::pieces:
      request_->on_piece(payload_done_, data, bytes);
      break;
    case Target::unexpected:
      std::memcpy(unexpected_.data() + payload_done_, data, bytes);
      break;
    case Target::control:
      control_.append(reinterpret_cast<const char*>(data), bytes);
      break;
    default:
      break;
  }
}

void TcpStream::finish_payload() {
  // Reset first: the callbacks below may post work that re-enters this stream.
  in_payload_ = false;
  Target target = target_;
  target_ = Target::none;
  RecvRequest* r = request_;
  request_ = nullptr;
  switch (target) {
    case Target::direct:
    case Target::pieces:
      r->on_received({});
      break;
    case Target::unexpected:
      owner_.store_unexpected(header_, std::move(unexpected_));
      break;
    case Target::control:
      owner_.on_control(header_, std::move(control_));
      break;
    default:
      break;
  }
}

}  // namespace hcomm::transport::tcp
