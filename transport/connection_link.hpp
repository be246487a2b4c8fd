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
// Engine thread only. Made by ConnectionProtocol (connection_protocol.hpp).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "hcomm/protocol.hpp"
#include "transport/medium_link.hpp"
#include "transport/progress_engine.hpp"

namespace hcomm::transport {

class ConnectionLink final : public MediumLink, public FdHandler, public Poller {
 public:
  /// The smallest max_message_bytes a protocol may report: a header and whole pieces fit.
  static constexpr size_t kMinMessageBytes = 4096;

  /// On the engine thread; up at once. Fails at once instead (error() is HCOMM_ERR_INVALID_ARG,
  /// is_up() false, the observer is not told) when `caps.max_message_bytes` is below
  /// kMinMessageBytes or `connection` is null.
  ConnectionLink(ProgressEngine& engine, LinkObserver& observer, Identity id,
                 std::unique_ptr<Connection> connection, ProtocolCaps caps,
                 std::string protocol_name);
  ~ConnectionLink() override;
  ConnectionLink(const ConnectionLink&) = delete;
  ConnectionLink& operator=(const ConnectionLink&) = delete;

  LinkCaps caps() const override;

  // FdHandler: the connection's event_fd()
  void on_events(int fd, uint32_t events) override;
  // Poller: a connection without an event fd, or one that has more than a round's messages
  bool poll() override { return drain(); }
  bool prepare_sleep() override { return !backlog_; }
  int max_sleep_ms() const override { return 1; }

 private:
  // MediumLink
  void send_frame(SendRequest* request) override;
  std::vector<SendRequest*> stop() override;

  void pump_sends();
  Status send_one(const SendRequest& frame);
  /// Hands every message receive() has to on_message(); true when there was one.
  bool drain();
  void on_message(const std::vector<std::byte>& message);
  /// The link's status for an error the connection reported while doing `what`.
  Status connection_error(const char* what, const Status& status) const;
  void protocol_error(const std::string& what);
  void unregister();

  ProgressEngine& engine_;
  std::unique_ptr<Connection> connection_;
  ProtocolCaps protocol_caps_;
  std::string protocol_name_;  // LinkCaps::medium points into it
  int event_fd_ = -1;          // with the engine as an fd; -1: none
  bool polled_ = false;        // with the engine as a poller
  bool backlog_ = false;       // event fd: the last round left messages in the connection
  bool sending_ = false;
  bool receiving_ = false;
  std::deque<SendRequest*> sendq_;
  IncomingFrame incoming_;  // the frame whose messages are arriving
};

}  // namespace hcomm::transport
