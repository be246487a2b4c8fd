// A Link over an application protocol's Connection (hcomm/protocol.hpp): how frames travel on a
// transport hcomm only knows as "reliable, ordered messages".
//
// Wire format: a frame of `length` payload bytes is one message [FrameHeader][first payload piece]
// followed by raw continuation messages, each at most the protocol's max_message_bytes. Every
// piece but the last is a multiple of 64 bytes, so a receive that takes its payload in pieces
// (RecvRequest::on_piece) gets whole elements of any type. Messages are ordered, so no other
// framing is needed: the next message after a frame's last piece starts a frame.
//
// The Connection is connected before the link exists: the link is up at once. It is read when its
// event_fd() is readable, until receive() has nothing more (in rounds of a bounded number of
// messages, polled between them), or, without an event fd, on every round of the progress engine
// and at least every millisecond while it sleeps.
//
// Closing: close() sends a close frame (the goodbye) and destroys the Connection right away, so
// that one which queues its sends delivers them while the process still runs. At the peer, the
// goodbye ends the link gracefully at once: it is the last thing the peer sends.
// Engine thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "hcomm/protocol.hpp"
#include "transport/frame_assembler.hpp"
#include "transport/frame_stamp.hpp"
#include "transport/link.hpp"
#include "transport/posted_receives.hpp"
#include "transport/progress_engine.hpp"
#include "transport/unexpected_frames.hpp"

namespace hcomm::transport {

class ConnectionLink final : public Link, public FdHandler, public Poller {
 public:
  /// The smallest max_message_bytes a protocol may report: a header and whole pieces fit.
  static constexpr size_t kMinMessageBytes = 4096;

  /// On the engine thread. Fails at once (error() is HCOMM_ERR_INVALID_ARG, is_up() false, the
  /// observer is not told) when `caps.max_message_bytes` is below kMinMessageBytes or
  /// `connection` is null. `bytes_sent` counts data payload bytes sent (not owned; may be null).
  ConnectionLink(ProgressEngine& engine, LinkObserver& observer,
                 std::unique_ptr<Connection> connection, ProtocolCaps caps,
                 std::string protocol_name, int my_rank, int peer, uint32_t comm_id,
                 std::atomic<uint64_t>* bytes_sent);
  ~ConnectionLink() override;
  ConnectionLink(const ConnectionLink&) = delete;
  ConnectionLink& operator=(const ConnectionLink&) = delete;

  int peer() const override { return peer_; }
  bool is_up() const override { return up_; }
  const std::string& describe() const override { return name_; }
  LinkCaps caps() const override;
  void post_send(SendRequest* request) override;
  void post_recv(RecvRequest* request) override;
  bool cancel_recv(RecvRequest* request) override;
  std::vector<std::pair<FrameHeader, Payload>> take_stored() override {
    return unexpected_.take_all();
  }
  void close() override;
  void abandon() override;
  const Status& error() const override { return error_; }

  // FdHandler: the connection's event_fd()
  void on_events(int fd, uint32_t events) override;
  // Poller: a connection without an event fd, or one that has more than a round's messages
  bool poll() override { return drain(); }
  bool prepare_sleep() override { return !backlog_; }
  int max_sleep_ms() const override { return 1; }

 private:
  struct Outgoing {
    FrameHeader header;
    const std::byte* payload = nullptr;  // null: `owned` (a control frame's text)
    SendRequest* request = nullptr;      // null for the link's own control frames
    std::string owned;
  };

  void send_control(const FrameHeader& header, std::string text) override;
  void pump_sends();
  Status send_frame(const Outgoing& frame);
  /// Hands every message receive() has to on_message(); true when there was one.
  bool drain();
  void on_message(const std::vector<std::byte>& message);
  void peer_said_goodbye();
  /// The link's status for an error the connection reported while doing `what`.
  Status connection_error(const char* what, const Status& status) const;
  void protocol_error(const std::string& what);
  /// Ends the link after the goodbye went out; releases the connection.
  void finish_close();
  void unregister();
  void fail(const Status& status, bool graceful, bool notify = true);

  ProgressEngine& engine_;
  LinkObserver& observer_;
  std::unique_ptr<Connection> connection_;
  ProtocolCaps protocol_caps_;
  std::string protocol_name_;  // LinkCaps::medium points into it
  std::string name_;
  const int peer_;
  const uint32_t comm_id_;
  int event_fd_ = -1;     // with the engine as an fd; -1: none
  bool polled_ = false;   // with the engine as a poller
  bool backlog_ = false;  // event fd: the last round left messages in the connection
  bool up_ = false;
  bool closing_ = false;
  bool peer_closed_ = false;  // the peer said goodbye: what it sent stays valid
  bool sending_ = false;
  bool receiving_ = false;
  Status error_;
  FrameStamp stamp_;
  std::deque<Outgoing> sendq_;
  PostedReceives posted_;
  UnexpectedFrames unexpected_;
  FrameAssembler frames_;  // the frame whose messages are arriving
};

}  // namespace hcomm::transport
