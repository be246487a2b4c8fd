#include "transport/tcp/tcp_link.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/errno_text.hpp"
#include "core/log.hpp"
#include "transport/tcp/tcp_connector.hpp"
#include "transport/tcp/tcp_counters.hpp"
#include "transport/tcp/tcp_listener.hpp"

namespace hcomm::transport::tcp {

TcpLink::TcpLink(ProgressEngine& engine, LinkObserver& observer, Identity id, TcpLinkParams params,
                 UpCallback on_up)
    : MediumLink(observer, id,
                 "tcp " + params.peer_endpoint + " (rank " + std::to_string(id.peer) + ")",
                 std::move(on_up)),
      engine_(engine),
      params_(std::move(params)) {
  streams_.resize(static_cast<size_t>(params_.num_streams));
}

TcpLink::~TcpLink() {
  if (params_.listener != nullptr) params_.listener->unroute(identity().peer, this);
  if (deadline_timer_ != 0) engine_.cancel_timer(deadline_timer_);
  connectors_.clear();
  end_quietly({HCOMM_ERR_ABORTED, "the communicator was destroyed"});
}

LinkCaps TcpLink::caps() const {
  LinkCaps c;
  c.medium = "tcp";
  c.max_frame_bytes = TcpStream::kMaxFrameBytes;
  c.one_sided = false;
  c.detects_peer_failure = true;  // EOF / ECONNRESET
  return c;
}

Hello TcpLink::my_hello(uint32_t stream_index) const {
  Hello h;
  h.comm_uid = params_.comm_uid;
  h.rank = identity().my_rank;
  h.stream_index = stream_index;
  h.num_streams = static_cast<uint32_t>(params_.num_streams);
  h.world_size = static_cast<uint32_t>(params_.world_size);
  h.generation = params_.generation;
  h.flags = params_.tls ? Hello::kFlagTls : 0;
  return h;
}

Status TcpLink::check_tls_agrees(const Hello& peer_hello) const {
  const bool peer_tls = (peer_hello.flags & Hello::kFlagTls) != 0;
  if (peer_tls == (params_.tls != nullptr)) return {};
  return {HCOMM_ERR_INVALID_ARG, describe() + " runs with HCOMM_TLS=" + (peer_tls ? "1" : "0") +
                                     " and this rank with HCOMM_TLS=" + (peer_tls ? "0" : "1") +
                                     ": set the same HCOMM_TLS on every rank"};
}

// ---- establishment

void TcpLink::connect(ProgressEngine::Clock::time_point deadline) {
  const int peer = identity().peer;
  sockaddr_in addr{};
  if (!parse_ipv4_endpoint(params_.peer_endpoint, &addr))
    return establishment_failed({HCOMM_ERR_INVALID_ARG, "rank " + std::to_string(peer) +
                                                            " published a malformed address '" +
                                                            params_.peer_endpoint + "'"});
  for (size_t i = 0; i < streams_.size(); ++i) {
    connectors_.push_back(std::make_unique<TcpConnector>(
        engine_, addr, describe(), my_hello(static_cast<uint32_t>(i)), params_.socket_options,
        params_.key, deadline, [this, i, peer](int fd, const Hello& peer_hello, const Status& st) {
          if (!st.ok()) return establishment_failed(st);
          if (peer_hello.rank != peer) {
            ::close(fd);
            return establishment_failed(
                {HCOMM_ERR_TRANSPORT, describe() + " answered as rank " +
                                          std::to_string(peer_hello.rank) +
                                          ": two jobs share a rendezvous address?"});
          }
          if (Status tls = check_tls_agrees(peer_hello); !tls.ok()) {
            ::close(fd);
            return establishment_failed(tls);
          }
          stream_ready(i, fd);
        }));
  }
  for (auto& c : connectors_) c->start();
}

void TcpLink::expect(ProgressEngine::Clock::time_point deadline) {
  deadline_timer_ = engine_.add_timer(deadline, [this] {
    deadline_timer_ = 0;
    if (!is_up())
      establishment_failed(
          {HCOMM_ERR_TIMEOUT, "rank " + std::to_string(identity().peer) + " (" +
                                  params_.peer_endpoint +
                                  ") did not connect before the connect deadline: is it running "
                                  "and can it reach this rank (HCOMM_SOCKET_IFNAME, firewall)?"});
  });
}

bool TcpLink::adopt(int fd, const Hello& hello) {
  if (hello.generation != params_.generation) {
    // Another attempt's connection (late, or early for one this side has not made yet): its
    // connector fails and the supervisors try again with matching attempts.
    HCOMM_LOG(debug, core::log::kNet,
              "%s: a connection of attempt %u refused (this link is attempt %u)",
              describe().c_str(), hello.generation, params_.generation);
    ::close(fd);
    return true;
  }
  const size_t index = hello.stream_index;
  const bool same_streams = static_cast<int>(hello.num_streams) == params_.num_streams;
  if (is_up() && index < streams_.size() && streams_[index] && same_streams) {
    // The peer connects again: it gave this link up (a failover it saw first). The connection
    // is for the link that replaces this one.
    fail({HCOMM_ERR_TRANSPORT, describe() + ": the peer connected again and left this connection"});
    return false;
  }
  if (index >= streams_.size() || streams_[index] || !same_streams) {
    HCOMM_LOG(warn, core::log::kNet,
              "%s: unexpected stream %u of %u (this rank uses %d streams per peer: is "
              "HCOMM_SOCKETS_PER_PEER the same on every rank?)",
              describe().c_str(), hello.stream_index, hello.num_streams, params_.num_streams);
    ::close(fd);
    establishment_failed({HCOMM_ERR_INVALID_ARG,
                          describe() + " connected with " + std::to_string(hello.num_streams) +
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
    establishment_failed(st.ok() ? Status{HCOMM_ERR_TRANSPORT,
                                          core::errno_text("hello reply to " + describe(), errno)}
                                 : st);
    return true;
  }
  // Checked after the reply, which tells the connecting side what this rank does.
  if (Status tls = check_tls_agrees(hello); !tls.ok()) {
    ::close(fd);
    establishment_failed(tls);
    return true;
  }
  stream_ready(index, fd);
  return true;
}

void TcpLink::stream_ready(size_t index, int fd) {
  if (!error().ok()) {
    ::close(fd);
    return;
  }
  std::unique_ptr<TlsSession> tls;
  if (params_.tls) {
    const auto role =
        params_.listener != nullptr ? TlsContext::Role::server : TlsContext::Role::client;
    tls = std::make_unique<TlsSession>(*params_.tls, role, fd);
    if (!tls->error().empty()) {
      ::close(fd);
      return establishment_failed({HCOMM_ERR_INTERNAL, describe() + ": " + tls->error()});
    }
  }
  streams_[index] = std::make_unique<TcpStream>(
      engine_, fd, *this, router(),
      describe() + (streams_.size() > 1 ? " stream " + std::to_string(index) : ""), std::move(tls));
  if (!params_.tls) on_stream_established();
}

void TcpLink::on_stream_established() {
  if (++streams_up_ < streams_.size()) return;
  if (deadline_timer_ != 0) engine_.cancel_timer(deadline_timer_);
  deadline_timer_ = 0;
  went_up();
}

void TcpLink::establishment_failed(const Status& status) {
  if (is_up() || !error().ok()) return;
  fail(status);
}

// ---- the medium

void TcpLink::send_frame(SendRequest* request) {
  // Stripe: the least loaded stream takes the frame (round robin among equals).
  TcpStream* best = nullptr;
  for (size_t i = 0; i < streams_.size(); ++i) {
    TcpStream* s = streams_[(next_stream_ + i) % streams_.size()].get();
    if (best == nullptr || s->queued_bytes() < best->queued_bytes()) best = s;
  }
  next_stream_ = (next_stream_ + 1) % streams_.size();
  best->enqueue(request);
}

void TcpLink::on_claimed(IncomingFrame& input) {
  for (auto& stream : streams_)
    if (stream && &stream->incoming() == &input) return stream->resume();
}

void TcpLink::say_goodbye() {
  MediumLink::say_goodbye();
  for (auto& s : streams_)
    if (s) s->finish_sending();
}

std::vector<SendRequest*> TcpLink::stop() {
  std::vector<SendRequest*> unsent;
  for (auto& s : streams_) {
    if (!s) continue;
    for (SendRequest* r : s->shut()) unsent.push_back(r);
  }
  return unsent;
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

MediumCounters TcpLink::delivery_counters() const {
  MediumCounters c;
  for (const auto& s : streams_) {
    if (!s) continue;
    TcpCounters t;
    if (!read_tcp_counters(s->fd(), &t)) continue;
    c.valid = true;
    c.packets_sent += t.segments_out;
    c.retransmits += t.retransmits;
    c.rtt_us = std::max(c.rtt_us, static_cast<double>(t.rtt_us));
  }
  return c;
}

void TcpLink::on_stream_failed(const Status& status, bool eof) {
  if (eof && closing()) return end_after_goodbye();
  if (eof && peer_said_goodbye_) return peer_closed();
  fail(eof ? Status{HCOMM_ERR_PEER_LOST, describe() + " closed the connection unexpectedly: the "
                                                      "peer process exited or crashed"}
           : status);
}

}  // namespace hcomm::transport::tcp
