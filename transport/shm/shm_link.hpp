// A peer on this host, through shared memory: a LinkSegment's two rings, polled by the progress
// engine (no system call on the busy path), a Doorbell for when the engine sleeps.
//
// Copies: the sender copies a payload into ring cells, the receiver copies it out into the
// posted receive's buffer — or reduces straight from the ring into it (RecvRequest::on_piece),
// so a reduction costs no extra pass. Cells are 32 KiB: a large frame is pipelined, the receiver
// draining cells while the sender fills others. The ring is 2 MiB each way: measured on 2 ranks,
// 1-2 MiB allreduces ran 1.6x slower with 512 KiB rings and 1.2x with 1 MiB (the halves travel
// as one frame; a frame the ring holds whole never stalls its sender), while 4 MiB gained nothing.
// A frame whose receive is not posted yet is held in the ring for up to 200 us, so it still
// lands in place; after that (or when small) it is copied aside, so the ring keeps moving.
//
// Failure detection: the peer's process is checked every 100 ms (pid and start time); a peer
// that closed its communicator sets its ring's `closed` flag.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <string>

#include "transport/frame_stamp.hpp"
#include "transport/link.hpp"
#include "transport/payload.hpp"
#include "transport/posted_receives.hpp"
#include "transport/progress_engine.hpp"
#include "transport/shm/cell_writer.hpp"
#include "transport/shm/doorbell.hpp"
#include "transport/shm/link_segment.hpp"
#include "transport/unexpected_frames.hpp"

namespace hcomm::transport::shm {

struct ShmLinkParams {
  uint32_t comm_id = 0;
  uint64_t comm_uid = 0;
  int my_rank = -1;
  int peer = -1;
  /// Counts the payload bytes of data frames sent to the peer (not owned; may be null).
  std::atomic<uint64_t>* bytes_sent = nullptr;
};

class ShmLink final : public Link, public Poller, public FdHandler {
 public:
  using UpCallback = std::function<void(const Status&)>;
  using Clock = ProgressEngine::Clock;

  ShmLink(ProgressEngine& engine, ShmLinkParams params, LinkObserver& observer, UpCallback on_up);
  ~ShmLink() override;

  /// Creates (lower rank) or attaches to (higher rank) the pair's segment; on_up runs once.
  void establish(Clock::time_point deadline);

  bool is_up() const override { return up_; }
  int peer() const override { return params_.peer; }
  const std::string& describe() const override { return name_; }
  LinkCaps caps() const override;
  void post_send(SendRequest* request) override;
  void post_recv(RecvRequest* request) override;
  bool cancel_recv(RecvRequest* request) override;
  std::vector<std::pair<FrameHeader, Payload>> take_stored() override {
    return unexpected_.take_all();
  }
  bool holds_unmatched() const override { return cur_.holding; }
  void close() override;
  void abandon() override;
  const Status& error() const override { return error_; }

  // Poller
  bool poll() override;
  bool prepare_sleep() override;
  // FdHandler (the doorbell)
  void on_events(int fd, uint32_t events) override;

 private:
  struct Outgoing {
    FrameHeader header;
    const std::byte* payload = nullptr;  // null: `owned` (a control frame's text)
    size_t written = 0;
    bool started = false;
    SendRequest* request = nullptr;
    std::string owned;
  };
  /// The frame being read out of the incoming ring.
  struct Incoming {
    bool active = false;
    bool holding = false;  // unmatched, waiting in the ring for its receive
    bool drop = false;
    bool stash = false;  // copied aside into `payload`
    FrameHeader header;
    size_t got = 0;
    RecvRequest* request = nullptr;
    std::byte* dst = nullptr;
    Status rejected;
    Payload payload;
    Clock::time_point held_since;
  };

  void send_control(const FrameHeader& header, std::string payload) override;
  void try_attach(Clock::time_point deadline);
  void wait_attached(Clock::time_point deadline);
  void went_up();
  void check_peer_alive();
  bool pump_sends();
  bool pump_receives();
  /// Decides where the frame in `cur_` goes; false when it is held in the ring.
  bool begin_frame();
  void match(RecvRequest* request);
  void finish_frame();
  /// Rings the peer's doorbell if it set `asked` (in a ring) before going to sleep.
  void wake_peer_if_asked(std::atomic<uint32_t>& asked);
  void fail(const Status& status, bool graceful);

  ProgressEngine& engine_;
  ShmLinkParams params_;
  LinkObserver& observer_;
  UpCallback on_up_;
  std::string name_;
  std::string segment_name_;
  std::string my_bell_name_;
  std::string peer_bell_name_;
  LinkSegment segment_;
  Doorbell bell_;
  ProcessIdentity peer_process_;
  int out_ = 0;  // ring this side produces into
  int in_ = 1;
  bool up_ = false;
  bool registered_ = false;  // poller and doorbell fd are with the engine
  bool closing_ = false;
  bool peer_closed_ = false;  // the peer destroyed its communicator (said goodbye)
  bool pumping_ = false;
  bool receiving_ = false;
  bool asked_for_bell_ = false;
  Status error_;
  ProgressEngine::TimerId timer_ = 0;
  uint64_t out_tail_ = 0;
  uint64_t out_head_seen_ = 0;
  uint64_t in_head_ = 0;
  uint64_t in_tail_seen_ = 0;
  FrameStamp stamp_;
  CellWriter writer_;
  std::deque<Outgoing> sendq_;
  Incoming cur_;
  PostedReceives posted_;
  UnexpectedFrames unexpected_;
};

}  // namespace hcomm::transport::shm
