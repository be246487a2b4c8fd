// A peer over TCP: `num_streams` connections, frames striped over them, matched by key on arrival.
//
// Establishment: the higher rank connects (TcpConnector), the lower rank's TcpListener accepts and
// hands each connection over with adopt(). Both sides exchange a Hello; the link is up when all
// its streams are. Closing: the goodbye goes on one stream, then every stream half-closes once
// its queue is written; the link ends when the peer's end of stream arrives on one (frames striped
// on the other streams may still be arriving after a goodbye, so a goodbye alone ends nothing).
// Engine thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/job_key.hpp"
#include "transport/medium_link.hpp"
#include "transport/progress_engine.hpp"
#include "transport/tcp/tcp_socket.hpp"
#include "transport/tcp/tcp_stream.hpp"
#include "transport/tcp/tls_context.hpp"

namespace hcomm::transport::tcp {

class TcpConnector;
class TcpListener;

struct TcpLinkParams {
  uint64_t comm_uid = 0;
  int world_size = 0;
  std::string peer_endpoint;  ///< "a.b.c.d:port" of the peer's listener
  int num_streams = 1;
  SocketOptions socket_options;
  /// Acceptor side: the listener that routes the peer's connections here (not owned; outlives
  /// the link).
  TcpListener* listener = nullptr;
  /// LinkContext::generation: only connections of the same attempt join the link.
  uint32_t generation = 0;
  /// The job's key (null: unauthenticated): the connector side proves it on every stream.
  std::shared_ptr<const core::JobKey> key;
  /// HCOMM_TLS=1: every stream is encrypted (the connector side is the TLS client); null: not.
  std::shared_ptr<const TlsContext> tls;
};

class TcpLink final : public MediumLink, public StreamOwner {
 public:
  TcpLink(ProgressEngine& engine, LinkObserver& observer, Identity id, TcpLinkParams params,
          UpCallback on_up);
  ~TcpLink() override;

  /// Connector side: opens every stream, retrying refused connections until `deadline`.
  void connect(ProgressEngine::Clock::time_point deadline);
  /// Acceptor side: fails establishment if the peer has not connected by `deadline`.
  void expect(ProgressEngine::Clock::time_point deadline);
  /// Acceptor side: an accepted connection whose Hello named this link; replies with our Hello.
  /// False (the fd untouched, this link failed): the peer connected again for a stream this
  /// link has, i.e. it gave this link up; the connection belongs to the link made next.
  bool adopt(int fd, const Hello& hello);

  LinkCaps caps() const override;
  void set_traffic_class(int tos) override;
  void set_pacing_rate(double bytes_per_second) override;
  /// The kernel's TCP_INFO of every stream, summed: segments sent, retransmitted, the largest
  /// smoothed round trip.
  MediumCounters delivery_counters() const override;

 private:
  // MediumLink
  void send_frame(SendRequest* request) override;
  std::vector<SendRequest*> stop() override;
  void say_goodbye() override;
  void on_claimed(IncomingFrame& input) override;
  // StreamOwner (and MediumLink: the goodbye waits for the end of stream)
  void on_goodbye() override { peer_said_goodbye_ = true; }
  void on_stream_failed(const Status& status, bool eof) override;
  void on_stream_established() override;

  void stream_ready(size_t index, int fd);
  void establishment_failed(const Status& status);
  Hello my_hello(uint32_t stream_index) const;
  /// The peer's Hello says it encrypts as this rank does; else an error naming both settings.
  Status check_tls_agrees(const Hello& peer_hello) const;

  ProgressEngine& engine_;
  TcpLinkParams params_;
  std::vector<std::unique_ptr<TcpStream>> streams_;
  std::vector<std::unique_ptr<TcpConnector>> connectors_;
  size_t streams_up_ = 0;
  bool peer_said_goodbye_ = false;
  ProgressEngine::TimerId deadline_timer_ = 0;
  size_t next_stream_ = 0;
};

}  // namespace hcomm::transport::tcp
