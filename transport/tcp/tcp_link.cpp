#include "transport/tcp/tcp_link.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.hpp"
#include "transport/tcp/tcp_connector.hpp"
#include "transport/tcp/tcp_listener.hpp"

namespace hcomm::transport::tcp {
namespace {

/// A control frame the link sends on its own behalf; frees itself once written.
class OwnedFrame final : public SendRequest {
 public:
  explicit OwnedFrame(std::string text) : text_(std::move(text)) {
    header.length = text_.size();
    payload = text_.data();
  }
  void on_sent(const Status&) override { delete this; }
  size_t text_size() const { return text_.size(); }

 private:
  std::string text_;
};

}  // namespace

TcpLink::TcpLink(ProgressEngine& engine, TcpLinkParams params, LinkObserver& observer,
                 UpCallback on_up)
    : engine_(engine),
      params_(std::move(params)),
      observer_(observer),
      on_up_(std::move(on_up)),
      stamp_{params_.my_rank, params_.bytes_sent} {
  name_ = "tcp " + params_.peer_endpoint + " (rank " + std::to_string(params_.peer) + ")";
  streams_.resize(static_cast<size_t>(params_.num_streams));
}

TcpLink::~TcpLink() {
  if (params_.listener != nullptr) params_.listener->unroute(params_.peer, this);
  if (deadline_timer_ != 0) engine_.cancel_timer(deadline_timer_);
  connectors_.clear();
  fail({HCOMM_ERR_ABORTED, "the communicator was destroyed"}, /*notify=*/false);
}

LinkCaps TcpLink::caps() const {
  LinkCaps c;
  c.medium = "tcp";
  c.max_frame_bytes = size_t{1} << 40;
  c.one_sided = false;
  c.detects_peer_failure = true;  // EOF / ECONNRESET
  return c;
}

Hello TcpLink::my_hello(uint32_t stream_index) const {
  Hello h;
  h.comm_uid = params_.comm_uid;
  h.rank = params_.my_rank;
  h.stream_index = stream_index;
  h.num_streams = static_cast<uint32_t>(params_.num_streams);
  h.world_size = static_cast<uint32_t>(params_.world_size);
  h.generation = params_.generation;
  return h;
}

void TcpLink::connect(ProgressEngine::Clock::time_point deadline) {
  sockaddr_in addr{};
  if (!parse_ipv4_endpoint(params_.peer_endpoint, &addr))
    return establishment_failed({HCOMM_ERR_INVALID_ARG, "rank " + std::to_string(params_.peer) +
                                                            " published a malformed address '" +
                                                            params_.peer_endpoint + "'"});
  for (size_t i = 0; i < streams_.size(); ++i) {
    connectors_.push_back(std::make_unique<TcpConnector>(
        engine_, addr, name_, my_hello(static_cast<uint32_t>(i)), params_.socket_options, deadline,
        [this, i](int fd, const Hello& peer_hello, const Status& st) {
          if (!st.ok()) return establishment_failed(st);
          if (peer_hello.rank != params_.peer) {
            ::close(fd);
            return establishment_failed(
                {HCOMM_ERR_TRANSPORT, name_ + " answered as rank " +
                                          std::to_string(peer_hello.rank) +
                                          ": two jobs share a rendezvous address?"});
          }
          stream_ready(i, fd);
        }));
  }
  for (auto& c : connectors_) c->start();
}

void TcpLink::expect(ProgressEngine::Clock::time_point deadline) {
  deadline_timer_ = engine_.add_timer(deadline, [this] {
    deadline_timer_ = 0;
    if (!up_)
      establishment_failed({HCOMM_ERR_TIMEOUT,
                            "rank " + std::to_string(params_.peer) + " (" + params_.peer_endpoint +
                                ") did not connect before the connect deadline: is it running "
                                "and can it reach this rank (HCOMM_SOCKET_IFNAME, firewall)?"});
  });
}

bool TcpLink::adopt(int fd, const Hello& hello) {
  if (hello.generation != params_.generation) {
    // Another attempt's connection (late, or early for one this side has not made yet): its
    // connector fails and the supervisors try again with matching attempts.
    HCOMM_LOG(debug, core::log::kNet,
              "%s: a connection of attempt %u refused (this link is attempt %u)", name_.c_str(),
              hello.generation, params_.generation);
    ::close(fd);
    return true;
  }
  size_t index = hello.stream_index;
  if (up_ && index < streams_.size() && streams_[index] &&
      static_cast<int>(hello.num_streams) == params_.num_streams) {
    // The peer connects again: it gave this link up (a failover it saw first). The connection
    // is for the link that replaces this one.
    fail({HCOMM_ERR_TRANSPORT, name_ + ": the peer connected again and left this connection"});
    return false;
  }
  if (index >= streams_.size() || streams_[index] ||
      static_cast<int>(hello.num_streams) != params_.num_streams) {
    HCOMM_LOG(warn, core::log::kNet,
              "%s: unexpected stream %u of %u (this rank uses %d streams per peer: is "
              "HCOMM_SOCKETS_PER_PEER the same on every rank?)",
              name_.c_str(), hello.stream_index, hello.num_streams, params_.num_streams);
    ::close(fd);
    establishment_failed(
        {HCOMM_ERR_INVALID_ARG, name_ + " connected with " + std::to_string(hello.num_streams) +
                                    " streams per peer, this rank expects " +
                                    std::to_string(params_.num_streams) +
                                    ": set the same HCOMM_SOCKETS_PER_PEER on every rank"});
    return true;
  }
  Status st = configure_socket(fd, params_.socket_options);
  Hello reply = my_hello(static_cast<uint32_t>(index));
  if (!st.ok() ||
      send(fd, &reply, sizeof(reply), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(reply))) {
    ::close(fd);
    establishment_failed(
        st.ok() ? Status{HCOMM_ERR_TRANSPORT, "hello reply to " + name_ + ": " + strerror(errno)}
                : st);
    return true;
  }
  stream_ready(index, fd);
  return true;
}

void TcpLink::stream_ready(size_t index, int fd) {
  if (!error_.ok()) {
    ::close(fd);
    return;
  }
  streams_[index] = std::make_unique<TcpStream>(
      engine_, fd, *this, name_ + (streams_.size() > 1 ? " stream " + std::to_string(index) : ""));
  if (++streams_up_ < streams_.size()) return;
  up_ = true;
  if (deadline_timer_ != 0) engine_.cancel_timer(deadline_timer_);
  deadline_timer_ = 0;
  HCOMM_LOG(info, core::log::kNet, "link up: %s, %zu stream(s)", name_.c_str(), streams_.size());
  if (on_up_) std::exchange(on_up_, nullptr)(Status{});
}

void TcpLink::establishment_failed(const Status& status) {
  if (up_ || !error_.ok()) return;
  fail(status);
}

void TcpLink::fail(const Status& status, bool notify) {
  if (!error_.ok()) return;
  error_ = status;
  bool was_up = up_;
  up_ = false;
  // After the peer's goodbye, frames to it are dropped as delivered: it has left and takes
  // nothing more (it completed its part of every operation before saying goodbye).
  const Status send_status = peer_closed_ ? Status{} : status;
  for (auto& s : streams_)
    if (s) s->shut(status, send_status);
  auto posted = posted_.take_all();
  for (RecvRequest* request : posted) request->on_received(status);
  if (on_up_) std::exchange(on_up_, nullptr)(status);
  if (was_up && notify) observer_.on_link_failed(params_.peer, status, peer_closed_);
}

void TcpLink::post_send(SendRequest* request) {
  if (!stamp_.admit(request, error_, peer_closed_)) return;
  // Stripe: the least loaded stream takes the frame (round robin among equals).
  TcpStream* best = nullptr;
  for (size_t i = 0; i < streams_.size(); ++i) {
    TcpStream* s = streams_[(next_stream_ + i) % streams_.size()].get();
    if (best == nullptr || s->queued_bytes() < best->queued_bytes()) best = s;
  }
  next_stream_ = (next_stream_ + 1) % streams_.size();
  best->enqueue(request);
}

void TcpLink::post_recv(RecvRequest* request) {
  // Frames that arrived before the link ended are still delivered (a peer may send and then
  // destroy its communicator before this rank posts the matching receive).
  if (unexpected_.deliver_stored(request)) return;
  if (!error_.ok()) return request->on_received(error_);
  for (auto& stream : streams_)
    if (stream && stream->claim(request)) return;
  posted_.post(request);
}

bool TcpLink::cancel_recv(RecvRequest* request) {
  return posted_.cancel(request);
}

void TcpLink::send_control(const FrameHeader& header, std::string text) {
  if (!error_.ok() || !up_) return;
  auto* frame = new OwnedFrame(std::move(text));
  frame->header = header;
  frame->header.length = frame->text_size();
  post_send(frame);
}

void TcpLink::set_traffic_class(int tos) {
  params_.socket_options.tos = tos;
  for (auto& s : streams_)
    if (s) set_socket_tos(s->fd(), tos);
}

void TcpLink::set_pacing_rate(double bytes_per_second) {
  params_.socket_options.pacing_rate = bytes_per_second;
  for (auto& s : streams_)
    if (s) set_socket_pacing(s->fd(), bytes_per_second);
}

bool TcpLink::holds_unmatched() const {
  for (auto& s : streams_)
    if (s && s->holding()) return true;
  return false;
}

void TcpLink::abandon() {
  fail({HCOMM_ERR_ABORTED, name_ + " was abandoned for another link"}, /*notify=*/false);
}

void TcpLink::close() {
  if (closing_) return;
  closing_ = true;
  FrameHeader h;
  h.kind = static_cast<uint8_t>(FrameKind::close);
  h.comm_id = params_.comm_id;
  send_control(h, "");
  for (auto& s : streams_)
    if (s) s->finish_sending();
}

RecvRequest* TcpLink::match(const FrameHeader& header) {
  return posted_.take(MatchKey::of(header));
}

bool TcpLink::drop(const FrameHeader& header) {
  return observer_.should_drop(header);
}

void TcpLink::store_unexpected(const FrameHeader& header, Payload payload) {
  // The receive may have been posted while this payload was still arriving.
  if (RecvRequest* r = match(header)) return unexpected_.deliver(r, header, std::move(payload));
  unexpected_.store(header, std::move(payload));
  observer_.on_frame_stored(params_.peer, header);
}

void TcpLink::on_control(const FrameHeader& header, std::string payload) {
  if (static_cast<FrameKind>(header.kind) == FrameKind::close) {
    peer_closed_ = true;
    HCOMM_LOG(info, core::log::kNet, "%s closed its communicator", name_.c_str());
    return;
  }
  if (static_cast<FrameKind>(header.kind) == FrameKind::channel)
    return observer_.on_channel_frame(params_.peer, header, payload);
  observer_.on_remote_abort(params_.peer, header.comm_id, header.op_seq, payload);
}

void TcpLink::on_stream_failed(const Status& status, bool eof) {
  if (eof && closing_) {
    fail({HCOMM_ERR_ABORTED, "the communicator was closed"}, /*notify=*/false);
    return;
  }
  if (eof && peer_closed_) {
    fail({HCOMM_ERR_PEER_LOST, "rank " + std::to_string(params_.peer) + " (" +
                                   params_.peer_endpoint + ") has destroyed its communicator"});
    return;
  }
  HCOMM_LOG(warn, core::log::kNet, "%s", status.message().c_str());
  fail(eof ? Status{HCOMM_ERR_PEER_LOST, name_ + " closed the connection unexpectedly: the peer "
                                                 "process exited or crashed"}
           : status);
}

}  // namespace hcomm::transport::tcp
