// A peer on this host, through shared memory: a LinkSegment's two rings, polled by the progress
// engine (no system call on the busy path), a Doorbell for when the engine sleeps.
//
// Copies: the sender copies a payload into ring cells, the receiver copies it out into the
// posted receive's buffer — or reduces straight from the ring into it (RecvRequest::on_piece),
// so a reduction costs no extra pass. Cells are LinkSegment::kCellBytes: a large frame is
// pipelined, the receiver draining cells while the sender fills others. A frame whose receive is
// not posted yet is held in the ring (kHold) so that it still lands in place; after that, or when
// small, it is copied aside, so the ring keeps moving.
//
// Failure detection: the peer's process is checked every ProcessIdentity::kCheckPeriod (pid and
// start time); a peer that closed its communicator sets its ring's `closed` flag, which is this
// medium's goodbye.
#pragma once

#include <chrono>
#include <deque>
#include <string>

#include "transport/medium_link.hpp"
#include "transport/progress_engine.hpp"
#include "transport/shm/cell_writer.hpp"
#include "transport/shm/doorbell.hpp"
#include "transport/shm/link_segment.hpp"

namespace hcomm::transport::shm {

class ShmLink final : public MediumLink, public Poller, public FdHandler {
 public:
  using Clock = ProgressEngine::Clock;
  /// Held frames: at least 4 KiB, for at most 200 us.
  static constexpr HoldPolicy kHold{4096, std::chrono::microseconds(200)};

  ShmLink(ProgressEngine& engine, LinkObserver& observer, Identity id, uint64_t comm_uid,
          UpCallback on_up);
  ~ShmLink() override;

  /// Creates (lower rank) or attaches to (higher rank) the pair's segment; on_up runs once.
  void establish(Clock::time_point deadline);

  LinkCaps caps() const override;

  // Poller
  bool poll() override;
  bool prepare_sleep() override;
  /// While a frame is held the engine may sleep, but no longer than its hold.
  int max_sleep_ms() const override;
  // FdHandler (the doorbell)
  void on_events(int fd, uint32_t events) override;

 private:
  struct Outgoing {
    SendRequest* request = nullptr;
    size_t written = 0;
    bool started = false;
  };

  // MediumLink
  void send_frame(SendRequest* request) override;
  std::vector<SendRequest*> stop() override;
  void say_goodbye() override;

  void try_attach(Clock::time_point deadline);
  void wait_attached(Clock::time_point deadline);
  void attached();
  void check_peer_alive();
  bool pump_sends();
  bool pump_receives();
  /// Rings the peer's doorbell if it set `asked` (in a ring) before going to sleep.
  void wake_peer_if_asked(std::atomic<uint32_t>& asked);

  ProgressEngine& engine_;
  const uint64_t comm_uid_;
  std::string segment_name_;
  std::string my_bell_name_;
  std::string peer_bell_name_;
  LinkSegment segment_;
  Doorbell bell_;
  ProcessIdentity peer_process_;
  int out_ = 0;  // ring this side produces into
  int in_ = 1;
  bool registered_ = false;  // poller and doorbell fd are with the engine
  bool pumping_ = false;
  bool receiving_ = false;
  bool asked_for_bell_ = false;
  ProgressEngine::TimerId timer_ = 0;
  uint64_t out_tail_ = 0;
  uint64_t out_head_seen_ = 0;
  uint64_t in_head_ = 0;
  uint64_t in_tail_seen_ = 0;
  CellWriter writer_;
  std::deque<Outgoing> sendq_;
  IncomingFrame incoming_;
};

}  // namespace hcomm::transport::shm
