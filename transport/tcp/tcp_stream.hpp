// One TCP connection of a TcpLink: frames out (scatter-gather from the callers' buffers) and
// frames in (straight into the destination when the receive is posted and the payload is large,
// through a small buffer otherwise). Engine thread only.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "transport/link.hpp"
#include "transport/payload.hpp"
#include "transport/progress_engine.hpp"

namespace hcomm::transport::tcp {

/// The link a stream belongs to: matching, unexpected frames, control frames, failures.
class StreamOwner {
 public:
  /// The posted receive for this frame, removed from the posted set; nullptr when none.
  virtual RecvRequest* match(const FrameHeader& header) = 0;
  /// True when the frame's operation was aborted here and its payload is to be dropped.
  virtual bool drop(const FrameHeader& header) = 0;
  /// A buffer for a frame that arrived before its receive (recycled by the owner).
  virtual Payload take_payload(size_t bytes) = 0;
  virtual void store_unexpected(const FrameHeader& header, Payload payload) = 0;
  virtual void on_control(const FrameHeader& header, std::string payload) = 0;
  /// The connection broke (error, or end of stream when `eof`).
  virtual void on_stream_failed(const Status& status, bool eof) = 0;

 protected:
  ~StreamOwner() = default;
};

class TcpStream final : public FdHandler {
 public:
  TcpStream(ProgressEngine& engine, int fd, StreamOwner& owner, std::string name);
  ~TcpStream();
  TcpStream(const TcpStream&) = delete;
  TcpStream& operator=(const TcpStream&) = delete;

  /// Queues a frame and writes what the socket takes now.
  void enqueue(SendRequest* request);
  size_t queued_bytes() const { return queued_bytes_; }
  /// Completes queued sends with `send_status` and fails the receive in progress with `status`;
  /// closes the socket. Idempotent.
  void shut(const Status& status, const Status& send_status);
  /// Half-closes once the queue is written (FIN after the last frame); reading goes on, so the
  /// peer's last frames are not lost to a reset.
  void finish_sending();

  void on_events(int fd, uint32_t events) override;
  /// If this stream holds back the payload of a frame `request` matches (see hold()), hands it
  /// to `request` and resumes reading; false otherwise.
  bool claim(RecvRequest* request);
  /// Reading is paused for a held frame (see hold()).
  bool holding() const { return target_ == Target::held; }
  int fd() const { return fd_; }

 private:
  enum class Target { none, direct, pieces, unexpected, held, control, discard };

  void flush();
  void read_some();
  bool process_buffer();
  void start_payload();
  void take(RecvRequest* request);
  /// A large frame nobody waits for yet: leave its payload in the socket for a moment, so that
  /// the receive, usually posted microseconds later, gets it straight into its destination
  /// instead of through a buffer and a copy. Bounded, so that a receive that can only be posted
  /// after a later frame of this stream arrives still gets it (then through a buffer).
  void hold();
  void stop_holding();
  void resume();
  void deliver(const std::byte* data, size_t bytes);
  void finish_payload();
  void update_interest();

  ProgressEngine& engine_;
  int fd_;
  StreamOwner& owner_;
  std::string name_;
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
  bool in_payload_ = false;
  FrameHeader header_;
  size_t payload_done_ = 0;
  Target target_ = Target::none;
  RecvRequest* request_ = nullptr;
  std::byte* direct_ = nullptr;
  Payload unexpected_;
  ProgressEngine::TimerId hold_timer_ = 0;
  std::string control_;
};

}  // namespace hcomm::transport::tcp
