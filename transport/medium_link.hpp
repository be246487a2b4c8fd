// The skeleton every medium's link is built on (TCP, shared memory, RDMA, an application's
// protocol): what a Link does whatever carries its bytes. It owns
//   - admission: counting a data frame's bytes, stamping the sender's rank, and completing a
//     frame at once on a link that has failed (as delivered when the peer said goodbye: it had
//     completed its part of every operation before leaving);
//   - the link's own frames (aborts, channel frames, the goodbye), queued behind the data;
//   - the receives: stored frames first, then a frame an input holds, else posted (FrameRouter);
//   - the one way a link ends, fail(): the medium stops, every request it still has is completed,
//     and the observer hears of it — exactly when the link was up and this side did not end it
//     (close(), abandon(), destruction).
// A medium implements the hooks below: send_frame() moves frames, stop() releases the medium,
// say_goodbye() (optional) closes it the medium's way, on_claimed() (optional) resumes reading
// a held frame.
//
// Threads: the engine's only, like every Link (transport/link.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hcomm/status.hpp"
#include "transport/frame.hpp"
#include "transport/frame_router.hpp"
#include "transport/link.hpp"
#include "transport/payload.hpp"

namespace hcomm::transport {

/// A frame of the link's own (abort, channel, goodbye): carries its text and frees itself once
/// sent or failed, so every medium queues only SendRequests.
class ControlFrame final : public SendRequest {
 public:
  ControlFrame(const FrameHeader& h, std::string text) : text_(std::move(text)) {
    header = h;
    header.length = text_.size();
    payload = text_.data();
  }
  void on_sent(const Status&) override { delete this; }

 private:
  std::string text_;
};

class MediumLink : public Link {
 public:
  using UpCallback = std::function<void(const Status&)>;

  /// Who the link connects: for stamping, counting and error messages.
  struct Identity {
    int my_rank = -1;
    int peer = -1;
    uint32_t comm_id = 0;
    /// Counts the payload bytes of data frames sent to the peer (not owned; may be null).
    std::atomic<uint64_t>* bytes_sent = nullptr;
  };

  int peer() const final { return id_.peer; }
  bool is_up() const final { return up_; }
  const std::string& describe() const final { return name_; }
  const Status& error() const final { return error_; }
  void post_send(SendRequest* request) final;
  void post_recv(RecvRequest* request) final;
  bool cancel_recv(RecvRequest* request) final { return router_.cancel(request); }
  std::vector<std::pair<FrameHeader, Payload>> take_stored() final { return router_.take_stored(); }
  bool holds_unmatched() const final { return router_.holding(); }
  /// What the router counted of arriving data frames, and what the medium counts itself
  /// (delivery_counters()).
  MediumCounters medium_counters() const final;
  /// Says goodbye the medium's way (say_goodbye()); the link ends without telling the observer.
  void close() final;
  void abandon() final;

 protected:
  /// `name`: "tcp 10.0.0.2:4000 (rank 3)", for every log line and error about the peer.
  /// `on_up` runs once: OK from went_up(), or the status establishment failed with.
  MediumLink(LinkObserver& observer, Identity id, std::string name, UpCallback on_up);
  /// A medium's destructor calls end_quietly() first: the skeleton cannot reach its hooks later.
  ~MediumLink() override = default;

  // ---- what a medium implements
  /// Queues `request` (admitted and stamped: a data frame or a ControlFrame) and moves what the
  /// medium takes now; completes it with on_sent() once its payload may be reused. Called only
  /// while the link has not failed.
  virtual void send_frame(SendRequest* request) = 0;
  /// The link ended: stop touching every request's memory now (fds out of the engine, queue
  /// pairs to error, timers cancelled) and return the sends not completed yet; the skeleton
  /// completes them (and fails the receives).
  virtual std::vector<SendRequest*> stop() = 0;
  /// close() on a link that is up: by default a close frame behind the data, after which the
  /// medium ends the link (end_after_goodbye()) once it has gone.
  virtual void say_goodbye() { send_frame(make_control(FrameKind::close, FrameHeader{}, "")); }
  /// A posted receive claimed a frame `input` held: its payload may be read now.
  virtual void on_claimed(IncomingFrame& input) { (void)input; }
  /// A close frame arrived on an input: by default the link ends gracefully at once (the
  /// goodbye is the last thing the peer sent on an ordered medium).
  virtual void on_goodbye() { peer_closed(); }
  /// What the medium itself counts of its delivery (MediumCounters: packets, retransmits,
  /// errors, its round trip); by default nothing (`valid` false).
  virtual MediumCounters delivery_counters() const { return {}; }

  // ---- what the skeleton gives a medium
  /// Establishment succeeded: the link is up, logged, and on_up hears OK.
  void went_up();
  /// The one way a link ends: with `status` for every request still in it; `graceful`: the
  /// peer said goodbye (the observer's on_link_failed says so). Only the first call counts.
  void fail(const Status& status, bool graceful = false);
  /// The peer destroyed its communicator (its goodbye, or the medium's equivalent).
  void peer_closed();
  /// This side's goodbye has gone: the link ends (HCOMM_ERR_ABORTED), the observer not told.
  void end_after_goodbye();
  /// Ends the link without telling the observer (a medium's destructor).
  void end_quietly(const Status& status);
  /// A frame of the link's own, stamped, ready for send_frame().
  ControlFrame* make_control(FrameKind kind, const FrameHeader& header, std::string text) const;
  /// Routes a control frame back to the skeleton: call with what IncomingFrame returned.
  void handle(IncomingFrame::Event event) {
    if (event == IncomingFrame::Event::goodbye) on_goodbye();
  }

  FrameRouter& router() { return router_; }
  LinkObserver& observer() { return observer_; }
  const Identity& identity() const { return id_; }
  void rename(std::string name) { name_ = std::move(name); }
  bool closing() const { return closing_; }

 private:
  void send_control(const FrameHeader& header, std::string payload) final;

  LinkObserver& observer_;
  const Identity id_;
  std::string name_;
  UpCallback on_up_;
  FrameRouter router_;
  bool up_ = false;
  bool closing_ = false;  // this side ends the link: close(), abandon(), destruction
  bool peer_closed_ = false;
  Status error_;
};

}  // namespace hcomm::transport
