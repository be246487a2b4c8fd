// One TCP connection of a TcpLink: frames out (scatter-gather from the callers' buffers) and
// frames in, routed by the link's FrameRouter: straight into the destination when the receive is
// posted and the payload is large, through a small buffer otherwise; a large frame nobody waits
// for yet is held in the socket (the HoldPolicy) so that its receive still gets it in place.
// With a TlsSession (HCOMM_TLS=1) the same bytes go through TLS: the handshake runs first, on
// the stream's own readiness events, and frames enqueued meanwhile wait for it.
// Engine thread only.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "transport/frame_router.hpp"
#include "transport/link.hpp"
#include "transport/progress_engine.hpp"
#include "transport/tcp/tls_session.hpp"

namespace hcomm::transport::tcp {

/// The link a stream belongs to.
class StreamOwner {
 public:
  /// A close frame arrived on this stream.
  virtual void on_goodbye() = 0;
  /// The connection broke (error, or end of stream when `eof`).
  virtual void on_stream_failed(const Status& status, bool eof) = 0;
  /// A TLS stream's handshake is done: it carries frames now (a plain stream never calls this:
  /// it is ready when made).
  virtual void on_stream_established() = 0;

 protected:
  ~StreamOwner() = default;
};

class TcpStream final : public FdHandler {
 public:
  /// Frames of at least 64 KiB are held in the socket for at most 200 us.
  static constexpr HoldPolicy kHold{64 * 1024, std::chrono::microseconds(200)};
  /// The largest payload of one frame (LinkCaps::max_frame_bytes); a longer one is a protocol
  /// error.
  static constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 40;

  /// `tls`: the connection's TLS state, its handshake not yet begun (null: plain TCP).
  TcpStream(ProgressEngine& engine, int fd, StreamOwner& owner, FrameRouter& router,
            std::string name, std::unique_ptr<TlsSession> tls = nullptr);
  ~TcpStream();
  TcpStream(const TcpStream&) = delete;
  TcpStream& operator=(const TcpStream&) = delete;

  /// Queues a frame and writes what the socket takes now.
  void enqueue(SendRequest* request);
  size_t queued_bytes() const { return queued_bytes_; }
  /// Closes the socket and hands back the sends not written; the frame in progress stays for the
  /// router to fail. Idempotent.
  std::vector<SendRequest*> shut();
  /// Half-closes once the queue is written (FIN after the last frame); reading goes on, so the
  /// peer's last frames are not lost to a reset.
  void finish_sending();

  void on_events(int fd, uint32_t events) override;
  /// A post claimed the frame this stream holds: read on.
  void resume();
  IncomingFrame& incoming() { return in_; }
  int fd() const { return fd_; }

 private:
  void flush();
  void read_some();
  bool process_buffer();
  /// The frame just begun is held: stop reading the socket until claimed or the hold ends.
  void hold();
  void handle(IncomingFrame::Event event);
  void update_interest();
  /// TLS: runs the handshake on; once done, writes what waited and reads.
  void advance_handshake();
  bool handshaking() const { return tls_ && !tls_->established(); }
  /// recv() or a TLS read: bytes read, 0 at the end of stream, -1 with errno (EPROTO: a TLS
  /// failure, described by io_error()).
  ssize_t receive(void* buf, size_t len);
  /// sendmsg() or TLS writes of `iov` in order: bytes taken, or -1 with errno.
  ssize_t transmit(const iovec* iov, int n_iov);
  /// What failed, for `what` ("receive from ..."), after receive() or transmit() gave -1.
  std::string io_error(const std::string& what, int err) const;
  /// FIN after the last frame (and TLS's close_notify before it).
  void half_close();

  ProgressEngine& engine_;
  int fd_;
  StreamOwner& owner_;
  std::string name_;
  std::unique_ptr<TlsSession> tls_;
  bool dead_ = false;

  // ---- sending
  std::deque<SendRequest*> queue_;
  size_t head_sent_ = 0;  // bytes of queue_.front() (header + payload) already written
  size_t queued_bytes_ = 0;
  bool want_write_ = false;
  bool finish_sending_ = false;

  // ---- receiving
  std::vector<std::byte> rx_;
  size_t rx_begin_ = 0, rx_end_ = 0;
  IncomingFrame in_;
  ProgressEngine::TimerId hold_timer_ = 0;
  ProgressEngine::TimerId read_timer_ = 0;  // TLS: decrypted bytes are left after a read round
};

}  // namespace hcomm::transport::tcp
