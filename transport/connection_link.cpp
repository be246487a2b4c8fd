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

ConnectionLink::ConnectionLink(ProgressEngine& engine, LinkObserver& observer,
                               std::unique_ptr<Connection> connection, ProtocolCaps caps,
                               std::string protocol_name, int my_rank, int peer, uint32_t comm_id,
                               std::atomic<uint64_t>* bytes_sent)
    : engine_(engine),
      observer_(observer),
      connection_(std::move(connection)),
      protocol_caps_(caps),
      protocol_name_(std::move(protocol_name)),
      peer_(peer),
      comm_id_(comm_id),
      stamp_{my_rank, bytes_sent},
      frames_(observer, posted_, unexpected_, peer) {
  name_ = protocol_name_ + " (rank " + std::to_string(peer_) + ")";
  if (!connection_) {
    error_ = {HCOMM_ERR_INVALID_ARG, "protocol '" + protocol_name_ +
                                         "' returned no connection to rank " +
                                         std::to_string(peer_)};
    return;
  }
  if (protocol_caps_.max_message_bytes < kMinMessageBytes) {
    error_ = {HCOMM_ERR_INVALID_ARG,
              "protocol '" + protocol_name_ + "' reports max_message_bytes = " +
                  std::to_string(protocol_caps_.max_message_bytes) + "; hcomm needs at least " +
                  std::to_string(kMinMessageBytes) + ": fix the protocol's caps()"};
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
  up_ = true;
  HCOMM_LOG(info, core::log::kNet, "link up: %s (%s)", name_.c_str(),
            fd >= 0 ? "event fd" : "polled");
}

ConnectionLink::~ConnectionLink() {
  fail({HCOMM_ERR_ABORTED, "the communicator was destroyed"}, false, /*notify=*/false);
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

void ConnectionLink::post_send(SendRequest* request) {
  if (!stamp_.admit(request, error_, peer_closed_)) return;
  Outgoing& o = sendq_.emplace_back();
  o.header = request->header;
  o.payload = static_cast<const std::byte*>(request->payload);
  o.request = request;
  pump_sends();
}

void ConnectionLink::send_control(const FrameHeader& header, std::string text) {
  if (!error_.ok() || closing_) return;
  Outgoing& o = sendq_.emplace_back();
  o.owned = std::move(text);
  o.header = header;
  o.header.length = o.owned.size();
  stamp_.stamp(o.header);
  pump_sends();
}

void ConnectionLink::pump_sends() {
  // Connection::send() copies or queues, so a frame is sent as soon as it is posted; the queue is
  // only there for frames posted from on_sent() callbacks, which this loop picks up instead of
  // recursing once per frame.
  if (sending_) return;
  sending_ = true;
  while (!sendq_.empty() && error_.ok()) {
    Status st = send_frame(sendq_.front());
    if (!st.ok()) {
      fail(connection_error("send", st), false);  // fails the frame at the front too
      break;
    }
    SendRequest* done = sendq_.front().request;
    sendq_.pop_front();
    if (done != nullptr) done->on_sent(Status{});
  }
  sending_ = false;
  if (closing_) finish_close();
}

Status ConnectionLink::send_frame(const Outgoing& frame) {
  const std::byte* payload = frame.payload != nullptr
                                 ? frame.payload
                                 : reinterpret_cast<const std::byte*>(frame.owned.data());
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

void ConnectionLink::post_recv(RecvRequest* request) {
  // Frames that arrived before the link ended are still delivered (a peer may send and then
  // destroy its communicator before this rank posts the matching receive).
  if (unexpected_.deliver_stored(request)) return;
  if (!error_.ok()) return request->on_received(error_);
  posted_.post(request);
}

bool ConnectionLink::cancel_recv(RecvRequest* request) {
  return posted_.cancel(request);
}

void ConnectionLink::on_events(int /*fd*/, uint32_t events) {
  drain();
  // A hung-up fd stays ready: a connection that still reports nothing would be called forever.
  if (error_.ok() && !backlog_ && (events & (EPOLLHUP | EPOLLERR)) != 0)
    fail({HCOMM_ERR_PEER_LOST, name_ + ": the connection's event fd reported a hang-up"}, false);
}

bool ConnectionLink::drain() {
  if (receiving_ || !error_.ok()) return false;
  receiving_ = true;
  size_t handled = 0;
  bool more = false;
  while (error_.ok()) {
    if (handled == kMessagesPerRound) {
      more = true;
      break;
    }
    auto got = connection_->receive();
    if (!got.ok()) {
      fail(connection_error("receive", got.status()), false);
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
  if (error_.ok() && event_fd_ >= 0 && more != backlog_) {
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
  if (!frames_.active()) {
    if (size < kHeader)
      return protocol_error("a " + std::to_string(size) + "-byte message where a frame starts");
    FrameHeader header;
    std::memcpy(&header, data, kHeader);
    if ((header.magic != FrameHeader::kMagic || header.version != FrameHeader::kVersion))
      return protocol_error("bad frame magic (not an hcomm peer, or a different hcomm version?)");
    data += kHeader;
    size -= kHeader;
    if (size > header.length)
      return protocol_error("a frame's first message is longer than the frame");
    if (frames_.begin(header) == FrameAssembler::Outcome::goodbye) return peer_said_goodbye();
    if (!error_.ok() || size == 0) return;  // a rejecting request may have closed the link
  } else if (size > frames_.missing()) {
    return protocol_error("a continuation message runs past the end of its frame");
  }
  if (size > 0 && frames_.add(data, size) == FrameAssembler::Outcome::goodbye) peer_said_goodbye();
}

void ConnectionLink::peer_said_goodbye() {
  HCOMM_LOG(info, core::log::kNet, "%s closed its communicator", name_.c_str());
  fail({HCOMM_ERR_PEER_LOST, "rank " + std::to_string(peer_) + " has destroyed its communicator"},
       /*graceful=*/true);
}

// ---- closing and failing

void ConnectionLink::close() {
  if (closing_) return;
  FrameHeader h;
  h.kind = static_cast<uint8_t>(FrameKind::close);
  h.comm_id = comm_id_;
  send_control(h, "");
  closing_ = true;
  // Called from an on_sent() callback, the goodbye is still queued: pump_sends() ends the link
  // once it has sent it.
  if (!sending_) finish_close();
}

void ConnectionLink::finish_close() {
  fail({HCOMM_ERR_ABORTED, "the communicator was closed"}, false);
  // Now, not when the link is destroyed: a connection that queues what it sends (as send() may)
  // gets its chance to deliver the goodbye while the process still runs.
  connection_.reset();
}

Status ConnectionLink::connection_error(const char* what, const Status& status) const {
  if (status.code() == HCOMM_ERR_PEER_LOST)
    return {HCOMM_ERR_PEER_LOST, name_ +
                                     " closed the connection unexpectedly (the peer process "
                                     "exited or crashed): " +
                                     status.message()};
  return {HCOMM_ERR_TRANSPORT,
          std::string(what) + " on " + name_ + " failed: " + status.to_string()};
}

void ConnectionLink::protocol_error(const std::string& what) {
  fail({HCOMM_ERR_TRANSPORT, "protocol error on " + name_ + ": " + what}, false);
}

void ConnectionLink::unregister() {
  if (event_fd_ >= 0) engine_.remove_fd(event_fd_);
  event_fd_ = -1;
  if (polled_) engine_.remove_poller(this);
  polled_ = false;
  backlog_ = false;
}

void ConnectionLink::abandon() {
  fail({HCOMM_ERR_ABORTED, name_ + " was abandoned for another link"}, false, /*notify=*/false);
}

void ConnectionLink::fail(const Status& status, bool graceful, bool notify) {
  if (!error_.ok()) return;
  error_ = status;
  peer_closed_ = graceful;
  const bool was_up = up_;
  up_ = false;
  unregister();
  if (!graceful && notify && !closing_)
    HCOMM_LOG(warn, core::log::kNet, "%s", status.message().c_str());
  // After the peer's goodbye, frames to it are dropped as delivered (see post_send).
  const Status send_status = graceful ? Status{} : status;
  auto queued = std::move(sendq_);
  sendq_.clear();
  for (auto& o : queued)
    if (o.request != nullptr) o.request->on_sent(send_status);
  auto posted = posted_.take_all();
  frames_.fail(status);
  for (RecvRequest* request : posted) request->on_received(status);
  if (was_up && notify && !closing_) observer_.on_link_failed(peer_, status, graceful);
}

}  // namespace hcomm::transport
