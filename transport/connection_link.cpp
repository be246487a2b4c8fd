#include "transport/connection_link.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/log.hpp"

namespace hcomm::transport {
namespace {

constexpr size_t kHeader = sizeof(FrameHeader);
// Pieces are cut at multiples of this: every element size divides it.
constexpr size_t kPieceAlign = 64;
// Messages handled per round of the engine (as TcpStream bounds its reads).
constexpr size_t kMessagesPerRound = 64;

size_t align_down(size_t bytes) {
  return bytes - bytes % kPieceAlign;
}

}  // namespace

ConnectionLink::ConnectionLink(ProgressEngine& engine, LinkObserver& observer, Identity id,
                               std::unique_ptr<Connection> connection, ProtocolCaps caps,
                               std::string protocol_name)
    : MediumLink(observer, id, protocol_name + " (rank " + std::to_string(id.peer) + ")", nullptr),
      engine_(engine),
      connection_(std::move(connection)),
      protocol_caps_(caps),
      protocol_name_(std::move(protocol_name)),
      incoming_(router(), HoldPolicy{}) {
  if (!connection_) {
    end_quietly({HCOMM_ERR_INVALID_ARG, "protocol '" + protocol_name_ +
                                            "' returned no connection to rank " +
                                            std::to_string(id.peer)});
    return;
  }
  if (protocol_caps_.max_message_bytes < kMinMessageBytes) {
    end_quietly({HCOMM_ERR_INVALID_ARG,
                 "protocol '" + protocol_name_ + "' reports max_message_bytes = " +
                     std::to_string(protocol_caps_.max_message_bytes) + "; hcomm needs at least " +
                     std::to_string(kMinMessageBytes) + ": fix the protocol's caps()"});
    return;
  }
  const int fd = connection_->event_fd();
  if (fd >= 0) {
    event_fd_ = fd;
    engine_.add_fd(fd, EPOLLIN, this);
  } else {
    polled_ = true;
    engine_.add_poller(this);
  }
  went_up();
}

ConnectionLink::~ConnectionLink() {
  end_quietly({HCOMM_ERR_ABORTED, "the communicator was destroyed"});
  unregister();  // also when construction failed before fail() had anything to undo
}

LinkCaps ConnectionLink::caps() const {
  LinkCaps c;
  c.medium = protocol_name_.c_str();
  c.max_frame_bytes = SIZE_MAX;  // frames are split into messages
  c.one_sided = false;
  c.detects_peer_failure = protocol_caps_.detects_peer_failure;
  return c;
}

// ---- sending

void ConnectionLink::send_frame(SendRequest* request) {
  sendq_.push_back(request);
  pump_sends();
}

void ConnectionLink::pump_sends() {
  // Connection::send() copies or queues, so a frame is sent as soon as it is posted; the queue is
  // only there for frames posted from on_sent() callbacks, which this loop picks up instead of
  // recursing once per frame.
  if (sending_) return;
  sending_ = true;
  while (!sendq_.empty() && error().ok()) {
    Status st = send_one(*sendq_.front());
    if (!st.ok()) {
      fail(connection_error("send", st));  // fails the frame at the front too
      break;
    }
    SendRequest* done = sendq_.front();
    sendq_.pop_front();
    done->on_sent(Status{});
  }
  sending_ = false;
  if (closing() && connection_) {
    // The goodbye went out (close() queued it last): end the link now and release the
    // connection, so that one which queues what it sends (as send() may) delivers the goodbye
    // while the process still runs.
    end_after_goodbye();
    connection_.reset();
  }
}

Status ConnectionLink::send_one(const SendRequest& frame) {
  const auto* payload = static_cast<const std::byte*>(frame.payload);
  const size_t length = frame.header.length;
  size_t piece = std::min<size_t>(length, align_down(protocol_caps_.max_message_bytes - kHeader));
  ConstBuffer parts[2] = {{&frame.header, kHeader}, {payload, piece}};
  Status st = connection_->send(parts, piece > 0 ? 2 : 1);
  const size_t continuation = align_down(protocol_caps_.max_message_bytes);
  for (size_t offset = piece; st.ok() && offset < length; offset += piece) {
    piece = std::min(length - offset, continuation);
    ConstBuffer part{payload + offset, piece};
    st = connection_->send(&part, 1);
  }
  return st;
}

// ---- receiving

void ConnectionLink::on_events(int /*fd*/, uint32_t events) {
  drain();
  // A hung-up fd stays ready: a connection that still reports nothing would be called forever.
  if (error().ok() && !backlog_ && (events & (EPOLLHUP | EPOLLERR)) != 0)
    fail({HCOMM_ERR_PEER_LOST, describe() + ": the connection's event fd reported a hang-up"});
}

bool ConnectionLink::drain() {
  if (receiving_ || !error().ok()) return false;
  receiving_ = true;
  size_t handled = 0;
  bool more = false;
  while (error().ok()) {
    if (handled == kMessagesPerRound) {
      more = true;
      break;
    }
    auto got = connection_->receive();
    if (!got.ok()) {
      fail(connection_error("receive", got.status()));
      break;
    }
    if (!got.value()) break;
    ++handled;
    on_message(*got.value());
  }
  receiving_ = false;
  // A busy peer must not keep the engine from other links and tasks, so a round ends after a
  // bound. What the connection still holds need not make its fd readable again: it is polled
  // until it has nothing more.
  if (error().ok() && event_fd_ >= 0 && more != backlog_) {
    backlog_ = more;
    if (more)
      engine_.add_poller(this);
    else
      engine_.remove_poller(this);
    polled_ = more;
  }
  return handled > 0;
}

void ConnectionLink::on_message(const std::vector<std::byte>& message) {
  const std::byte* data = message.data();
  size_t size = message.size();
  if (!incoming_.active()) {
    if (size < kHeader)
      return protocol_error("a " + std::to_string(size) + "-byte message where a frame starts");
    FrameHeader header;
    std::memcpy(&header, data, kHeader);
    if (header.magic != FrameHeader::kMagic || header.version != FrameHeader::kVersion)
      return protocol_error("bad frame magic (not an hcomm peer, or a different hcomm version?)");
    data += kHeader;
    size -= kHeader;
    if (size > header.length)
      return protocol_error("a frame's first message is longer than the frame");
    handle(incoming_.begin(header));
    if (!error().ok() || size == 0) return;  // a rejecting request may have closed the link
  } else if (size > incoming_.missing()) {
    return protocol_error("a continuation message runs past the end of its frame");
  }
  if (size > 0) handle(incoming_.add(data, size));
}

// ---- failing

Status ConnectionLink::connection_error(const char* what, const Status& status) const {
  if (status.code() == HCOMM_ERR_PEER_LOST)
    return {HCOMM_ERR_PEER_LOST, describe() +
                                     " closed the connection unexpectedly (the peer process "
                                     "exited or crashed): " +
                                     status.message()};
  return {HCOMM_ERR_TRANSPORT,
          std::string(what) + " on " + describe() + " failed: " + status.to_string()};
}

void ConnectionLink::protocol_error(const std::string& what) {
  fail({HCOMM_ERR_TRANSPORT, "protocol error on " + describe() + ": " + what});
}

void ConnectionLink::unregister() {
  if (event_fd_ >= 0) engine_.remove_fd(event_fd_);
  event_fd_ = -1;
  if (polled_) engine_.remove_poller(this);
  polled_ = false;
  backlog_ = false;
}

std::vector<SendRequest*> ConnectionLink::stop() {
  unregister();
  std::vector<SendRequest*> unsent(sendq_.begin(), sendq_.end());
  sendq_.clear();
  return unsent;
}

}  // namespace hcomm::transport
