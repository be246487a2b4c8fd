// A peer over TCP: `num_streams` connections, frames striped over them, matched by key on arrival.
//
// Establishment: the higher rank connects (TcpConnector), the lower rank's TcpListener accepts and
// hands each connection over with adopt(). Both sides exchange a Hello; the link is up when all
// its streams are. Engine thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/frame_stamp.hpp"
#include "transport/link.hpp"
#include "transport/posted_receives.hpp"
#include "transport/progress_engine.hpp"
#include "transport/tcp/tcp_socket.hpp"
#include "transport/tcp/tcp_stream.hpp"
#include "transport/unexpected_frames.hpp"

namespace hcomm::transport::tcp {

class TcpConnector;
class TcpListener;

struct TcpLinkParams {
  uint32_t comm_id = 0;
  uint64_t comm_uid = 0;
  int my_rank = -1;
  int world_size = 0;
  int peer = -1;
  std::string peer_endpoint;  ///< "a.b.c.d:port" of the peer's listener
  int num_streams = 1;
  SocketOptions socket_options;
  /// Counts the payload bytes of data frames sent to the peer (not owned; may be null): read by
  /// other threads, hence atomic.
  std::atomic<uint64_t>* bytes_sent = nullptr;
  /// Acceptor side: the listener that routes the peer's connections here (not owned; outlives
  /// the link).
  TcpListener* listener = nullptr;
  /// LinkContext::generation: only connections of the same attempt join the link.
  uint32_t generation = 0;
};

class TcpLink final : public Link, public StreamOwner {
 public:
  /// Called once: OK when every stream is up, else why establishment failed.
  using UpCallback = std::function<void(const Status&)>;

  TcpLink(ProgressEngine& engine, TcpLinkParams params, LinkObserver& observer, UpCallback on_up);
  ~TcpLink() override;

  /// Connector side: opens every stream, retrying refused connections until `deadline`.
  void connect(ProgressEngine::Clock::time_point deadline);
  /// Acceptor side: fails establishment if the peer has not connected by `deadline`.
  void expect(ProgressEngine::Clock::time_point deadline);
  /// Acceptor side: an accepted connection whose Hello named this link; replies with our Hello.
  /// False (the fd untouched, this link failed): the peer connected again for a stream this
  /// link has, i.e. it gave this link up; the connection belongs to the link made next.
  bool adopt(int fd, const Hello& hello);

  int peer() const override { return params_.peer; }
  const std::string& describe() const override { return name_; }
  LinkCaps caps() const override;
  void post_send(SendRequest* request) override;
  void post_recv(RecvRequest* request) override;
  bool cancel_recv(RecvRequest* request) override;
  std::vector<std::pair<FrameHeader, Payload>> take_stored() override {
    return unexpected_.take_all();
  }
  bool holds_unmatched() const override;
  void set_traffic_class(int tos) override;
  void set_pacing_rate(double bytes_per_second) override;
  void close() override;
  void abandon() override;
  const Status& error() const override { return error_; }
  bool is_up() const override { return up_; }

 private:
  // StreamOwner
  RecvRequest* match(const FrameHeader& header) override;
  bool drop(const FrameHeader& header) override;
  Payload take_payload(size_t bytes) override { return unexpected_.take_buffer(bytes); }
  void store_unexpected(const FrameHeader& header, Payload payload) override;
  void on_control(const FrameHeader& header, std::string payload) override;
  void on_stream_failed(const Status& status, bool eof) override;

  void stream_ready(size_t index, int fd);
  void establishment_failed(const Status& status);
  void fail(const Status& status, bool notify = true);
  void send_control(const FrameHeader& header, std::string payload) override;
  Hello my_hello(uint32_t stream_index) const;

  ProgressEngine& engine_;
  TcpLinkParams params_;
  LinkObserver& observer_;
  UpCallback on_up_;
  std::string name_;
  std::vector<std::unique_ptr<TcpStream>> streams_;
  std::vector<std::unique_ptr<TcpConnector>> connectors_;
  size_t streams_up_ = 0;
  bool up_ = false;
  bool closing_ = false;
  bool peer_closed_ = false;  // the peer said goodbye before its connection ended
  Status error_;
  ProgressEngine::TimerId deadline_timer_ = 0;
  FrameStamp stamp_;
  size_t next_stream_ = 0;
  PostedReceives posted_;
  UnexpectedFrames unexpected_;
};

}  // namespace hcomm::transport::tcp
