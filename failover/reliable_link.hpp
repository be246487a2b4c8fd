// failover/: what keeps a communicator alive through link faults.
//
// A ReliableLink is the one Link the schedule executor sees for a peer. Under it are two real
// links, the primary (RDMA, TCP on the fabric, shared memory, an application protocol) and the
// fallback (TCP, on HCOMM_FALLBACK_IFNAME when set), both kept up and both sending heartbeats.
// It adds what makes a switch between them lossless:
// - every data frame gets a per-peer sequence number (FrameHeader::link_seq);
// - the sender keeps every frame until the receiver acknowledges it: small frames as a copy (so
//   a send completes at once, as an eager send does), large ones in place (the send completes
//   when acknowledged, so the caller's buffer stays unchanged until then);
// - the receiver acknowledges every frame that arrived whole — delivered to its receive, or
//   stored until that is posted (a failover takes the stored frames over from the link left
//   behind) — as a cumulative point plus ranges, and drops a frame it has already; a receive
//   that was half filled when its link died skips the bytes it has when the frame comes again;
// - on a fault (a link error, or no sign of life for HCOMM_KEEPALIVE_TIMEOUT_MS) traffic moves to
//   the other link at once: the dead link is dropped, posted receives move over, every
//   unacknowledged frame is sent again, and the peer is told (it follows the first frame it sees
//   on the new link anyway).
// What needs judgement — when to reconnect, when to move back, when the peer is lost — is the
// link supervisor's (link_supervisor.hpp, run by an actor); this class reports ChannelEvents and
// carries out SupervisorCommands. Engine thread only, like every Link.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "failover/delivery_window.hpp"
#include "failover/failover_recorder.hpp"
#include "failover/keepalive_detector.hpp"
#include "failover/link_supervisor.hpp"
#include "transport/link.hpp"
#include "transport/link_protocol.hpp"
#include "transport/progress_engine.hpp"
#include "transport/unexpected_frames.hpp"

namespace hcomm::failover {

/// How one of the two links is made.
struct SlotSpec {
  /// Null: the link is handed over ready-made (adopt()) and cannot be made again.
  transport::LinkProtocol* protocol = nullptr;
  std::string name;  ///< "rdma", "tcp", "tcp-fallback": logs, events, RankInfo::transport
  std::string peer_address;
};

struct ReliableLinkParams {
  /// Engine, communicator, ranks and byte counter (the observer is set per link).
  transport::LinkContext context;
  std::array<SlotSpec, 2> slots;
  std::chrono::milliseconds keepalive_interval{200};
  std::chrono::milliseconds keepalive_timeout{800};
  double phi_threshold = 0;
  /// How long one reconnection attempt may take to come up.
  std::chrono::milliseconds redial_timeout{3000};
};

class ReliableLink final : public transport::Link {
 public:
  using Clock = transport::ProgressEngine::Clock;
  using UpCallback = std::function<void(const Status&)>;

  ReliableLink(ReliableLinkParams params, transport::LinkObserver& observer,
               ChannelListener& listener, FailoverRecorder& recorder);
  ~ReliableLink() override;

  /// Makes both links (a slot given by adopt() is not made); `on_up` runs once: OK when both are
  /// up, else the first error. Traffic starts on the primary.
  void establish(Clock::time_point deadline, UpCallback on_up);
  /// Before establish(): `slot`'s link, already connected (an application protocol's), whose
  /// observer is observer_for(slot).
  void adopt(int slot, std::unique_ptr<transport::Link> link);
  transport::LinkObserver& observer_for(int slot);
  void command(const SupervisorCommand& command);

  // transport::Link
  int peer() const override { return params_.context.peer; }
  bool is_up() const override { return error_.ok() && !closing_; }
  const std::string& describe() const override { return name_; }
  transport::LinkCaps caps() const override;
  void post_send(transport::SendRequest* request) override;
  void post_recv(transport::RecvRequest* request) override;
  bool cancel_recv(transport::RecvRequest* request) override;
  void send_abort(uint32_t comm_id, uint64_t op_seq, const std::string& reason) override;
  void send_channel(const transport::FrameHeader& header, std::string payload) override;
  void close() override;
  /// Both links stop at once; requests still held are dropped, not called back.
  void abandon() override;
  const Status& error() const override;
  /// Both links, and the links made later.
  void set_traffic_class(int tos) override;
  void set_pacing_rate(double bytes_per_second) override;

 private:
  class Tap;
  struct Entry;
  struct SendProxy;
  struct Pending;
  struct RecvProxy;
  struct Grave;
  enum class SlotState { empty, connecting, up };
  struct Slot {
    SlotState state = SlotState::empty;
    std::unique_ptr<transport::Link> link;
    std::unique_ptr<Tap> tap;
    uint64_t epoch = 0;
    KeepaliveDetector detector;
    Clock::time_point last_sent{};
    std::unordered_set<SendProxy*> sends;  // in flight on `link`, owned here
    std::unordered_set<RecvProxy*> recvs;  // posted on `link`, owned here
    uint64_t attempt = 0;                  // reconnection waiting for the peer's reply
    transport::ProgressEngine::TimerId attempt_timer = 0;
    bool redialed = false;  // made by a reconnection (its coming up is news)
    bool proven = false;    // reported up: made at creation, or heard from since reconnected
    uint32_t heard_since_up = 0;
    explicit Slot(const KeepaliveDetector& d);
    Slot(Slot&&) noexcept;
    ~Slot();
  };

  // ---- links
  /// `generation`: the attempt, the same on both ranks (0 for links made without the peer's
  /// word: at creation, or when no other link is up to agree over).
  void start_link(int slot, const std::string& peer_offer, bool redial, uint32_t generation);
  void on_slot_up(int slot, uint64_t epoch, const Status& status);
  /// The slot's link is dropped: its requests move off it, the link is destroyed soon.
  void retire(int slot);
  void bury();
  /// A link fault: drop it and move traffic to the other link (or wait with none).
  void fail_slot(int slot, const std::string& reason);
  /// Moves traffic to `slot` (up): leaves the active link, tells the peer, replays, reposts.
  /// `quiet`: the caller logged and recorded the switch already (or there is none to record).
  void activate(int slot, const std::string& reason, bool quiet);
  void follow_soon(int slot);
  void redial(int slot);
  void fail_attempt(int slot, uint64_t epoch, const std::string& reason);
  void declare_lost(const std::string& reason);
  void report(ChannelEvent::Kind kind, int slot, int from, const std::string& reason);
  void record(LinkEvent::Kind kind, int from, int to, const std::string& reason,
              double detection_ms = 0);
  const std::string& slot_name(int slot) const;
  transport::LinkContext context_for(int slot);
  std::chrono::milliseconds peer_silence(Clock::time_point now) const;

  // ---- heartbeats and acknowledgements
  void tick();
  std::chrono::milliseconds tick_period() const;
  void heard(int slot);
  void send_on(int slot, uint32_t kind, uint32_t chunk, uint64_t value, std::string payload);
  void send_ack();
  void schedule_ack();
  void on_channel(int slot, const transport::FrameHeader& header, const std::string& payload);
  void on_acknowledged(uint64_t cumulative, const std::string& ranges);

  // ---- frames
  void transmit(Entry* entry, int slot);
  void on_proxy_sent(SendProxy* proxy, const Status& status);
  void maybe_release(Entry* entry);
  /// An entry is done: its copy's memory goes back to the spares.
  void recycle(Entry& entry);
  void post_pending(Pending* pending, int slot);
  /// A new posting of `pending` on `slot`'s link (not yet handed to it).
  RecvProxy* attach_proxy(Pending* pending, int slot);
  /// The executor fails and frees its requests (close, abandon): none is called back after.
  void forget_requests();
  void on_proxy_received(RecvProxy* proxy, const Status& status);
  /// Frame `seq` of the peer arrived whole (delivered or stored): acknowledged.
  void on_delivered(uint64_t seq, uint8_t flags);
  bool drop_duplicate(int slot, const transport::FrameHeader& header);
  void on_slot_failed(int slot, const Status& status, bool graceful);
  void peer_closed(int slot, const Status& status);

  ReliableLinkParams params_;
  transport::ProgressEngine& engine_;
  transport::LinkObserver& observer_;
  ChannelListener& listener_;
  FailoverRecorder& recorder_;
  const bool coordinator_;  // the lower rank of the pair
  std::string name_;
  std::array<Slot, 2> slots_;
  Clock::time_point last_life_{};  // the last frame from the peer, on any link
  int active_ = kNoSlot;
  int last_active_ = kNoSlot;
  Status error_;
  bool closing_ = false;
  bool peer_closed_ = false;
  int tos_ = -1;       // set_traffic_class(), for links made later; -1: as the protocol makes them
  double pacing_ = 0;  // set_pacing_rate(), likewise
  transport::Link* final_ = nullptr;  // after the peer's goodbye: the link its last frames sit in
  UpCallback on_up_;
  transport::ProgressEngine::TimerId tick_timer_ = 0;
  transport::ProgressEngine::TimerId deadline_timer_ = 0;
  uint64_t next_attempt_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for deferred tasks
  std::vector<std::unique_ptr<Grave>> graves_;
  struct HeldAbort {
    uint32_t comm_id;
    uint64_t op_seq;
    std::string reason;
  };
  std::vector<HeldAbort> held_aborts_;  // sent while no link was up

  // sending: unacknowledged frames by sequence number
  uint64_t next_seq_ = 1;
  std::map<uint64_t, std::unique_ptr<Entry>> entries_;
  size_t staged_bytes_ = 0;
  std::vector<std::vector<std::byte>> spare_;
  // receiving
  std::unordered_map<transport::RecvRequest*, std::unique_ptr<Pending>> pending_;
  DeliveryWindow window_;
  transport::UnexpectedFrames stored_;  // taken over from links that went away
  uint32_t unacked_deliveries_ = 0;
  bool ack_scheduled_ = false;
};

}  // namespace hcomm::failover
