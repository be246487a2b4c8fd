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
//   on the new link anyway);
// - a switch away from a healthy link (a fail-back, or following the peer's switch) leaves it up,
//   standing by: it goes on with heartbeats, delivers the frames and receives it holds, hands
//   the frames that still arrive on it to their receives, and is the next fault's fallback at
//   once. A link is dropped only when it fails (or the peer closes or remakes it); what it held
//   then goes on on the active link.
// - both links' health is measured continuously (link_health.hpp): a link whose goodput, loss
//   or round trip turns sick while the other is healthy is failed like a dead one (a gray
//   failure), and a link traffic left is probed with bulk frames (link_probe.hpp) on the
//   supervisor's word before traffic goes back to it;
// - under multi-path, frames of at least multipath_min_bytes go on whichever healthy link would
//   deliver them first (by its backlog and measured goodput), and receives that large wait on
//   both links; numbering, acknowledgement and replay are the same whichever link a frame takes.
// What needs judgement — when to reconnect, when to move back, when the peer is lost — is the
// link supervisor's (link_supervisor.hpp, run by an actor); this class reports ChannelEvents and
// carries out SupervisorCommands. Engine thread only, like every Link.
//
// The pieces: the channel's own messages (channel_message.hpp), the frames kept for replay
// (replay_buffer.hpp), the acknowledgements owed (receipts.hpp), the requests posted on the
// links for the executor's (link_proxies.hpp). Its implementation is in six files: the links'
// life cycle (reliable_link.cpp), faults and switches (reliable_link_switch.cpp), heartbeats and
// channel messages (reliable_link_channel.cpp), data frames (reliable_link_traffic.cpp), health,
// gray failures and probes (reliable_link_health.cpp), multi-path (reliable_link_paths.cpp). Its
// clock, deferred tasks and timers come from a Scheduler (scheduler.hpp): the progress engine's,
// unless ReliableLinkParams names another.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "failover/channel_message.hpp"
#include "failover/failover_recorder.hpp"
#include "failover/keepalive_detector.hpp"
#include "failover/link_health.hpp"
#include "failover/link_probe.hpp"
#include "failover/link_proxies.hpp"
#include "failover/link_supervisor.hpp"
#include "failover/receipts.hpp"
#include "failover/replay_buffer.hpp"
#include "failover/scheduler.hpp"
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
  /// The clock, tasks and timers (not owned; must outlive the link). Null: context.engine's and
  /// the steady clock.
  Scheduler* scheduler = nullptr;
  /// When a link that is up counts as sick (a gray failure), and how it is probed.
  GrayParams gray;
  ProbeParams probe;
  /// Both links carry frames of at least multipath_min_bytes while both are healthy.
  bool multipath = false;
  size_t multipath_min_bytes = size_t{1} << 20;
};

class ReliableLink final : public transport::Link, private ProxyOwner {
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
  /// The primary's and the fallback's medium counters, summed.
  transport::MediumCounters medium_counters() const override;

 private:
  class Tap;
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
    Scheduler::TimerId attempt_timer = 0;
    // Up but not active: traffic moved off it while it was healthy. It stays up, with its
    // heartbeats, as the next fault's fallback; sends in flight on it finish there, receives
    // it had matched complete there, frames still arriving on it go to their receives.
    bool standby = false;
    bool redialed = false;  // made by a reconnection (its coming up is news)
    bool proven = false;    // reported up: made at creation, or heard from since reconnected
    uint32_t heard_since_up = 0;
    // May carry traffic without a probe first: made at creation, switched to, or admitted (the
    // supervisor's word); a reconnected link is not until then.
    bool admitted = false;
    LinkHealth health;           // outlives the slot's link instances
    ProbeEcho echo;              // the peer's probe rounds on this link
    uint64_t peer_stamp_us = 0;  // the last timestamp the peer sent on this link, and when
    Clock::time_point peer_stamp_at{};
    bool peer_paced = false;  // the peer's last message said its traffic is paced (QoS)
    Slot(const KeepaliveDetector& d, const GrayParams& gray);
    Slot(Slot&&) noexcept;
    ~Slot();
  };

  // ---- links (reliable_link.cpp)
  /// `generation`: the attempt, the same on both ranks (0 for links made without the peer's
  /// word: at creation, or when no other link is up to agree over).
  void start_link(int slot, const std::string& peer_offer, bool redial, uint32_t generation);
  void on_slot_up(int slot, uint64_t epoch, const Status& status);
  /// The slot's link is dropped: its requests move off it (onto the active link, when it is
  /// another one), the link is destroyed soon.
  void retire(int slot);
  /// Takes the frames `link` stored (arrived whole, no receive yet) into stored_.
  void keep_stored(transport::Link& link);
  void bury();
  /// A new observer for the next link of `slot` (the one it replaces may still hold the old).
  void renew_tap(int slot);
  void redial(int slot);
  void fail_attempt(int slot, uint64_t epoch, const std::string& reason);
  /// The executor fails and frees its requests (close, abandon): none is called back after.
  void forget_requests();
  const std::string& slot_name(int slot) const;
  transport::LinkContext context_for(int slot);
  /// A task for later that runs only while this link lives.
  void defer(std::function<void()> task);

  // ---- faults and switches (reliable_link_switch.cpp)
  void on_slot_failed(int slot, const Status& status, bool graceful);
  void peer_closed(int slot, const Status& status);
  /// A link fault: drop it and move traffic to the other link (or wait with none). `gray`: the
  /// link was up but sick (the supervisor holds a fail-back to it off for a while).
  void fail_slot(int slot, const std::string& reason, bool gray = false);
  /// Moves traffic to `slot` (up): leaves the active link standing by, tells the peer, replays,
  /// reposts.
  /// `quiet`: the caller logged and recorded the switch already (or there is none to record).
  void activate(int slot, const std::string& reason, bool quiet);
  /// Sends every kept frame that no link holds again on `slot`, in order, but those whose last
  /// send went on a link that is still up (activate(), and retire() of a standby).
  void replay(int slot);
  /// Posts every receive that no link holds on `slot` (activate()).
  void repost(int slot);
  /// `slot` is left behind, healthy: the receives it can give back move to the next link.
  void stand_by(int slot);
  /// The frames stored in `slot`'s link are taken into stored_, and hand_over_stored().
  void collect_stored(int slot);
  /// Hands stored_ frames to the receives waiting for them: one posted on the active link is
  /// taken back and handed its frame; one in the middle of its frame on a standby (the peer
  /// left that link, the frame came whole again) retires the standby. Then posts again the
  /// receives no link holds.
  void hand_over_stored();
  /// The link beside the active one is in the middle of frames (receives it matched).
  bool receiving_beside() const;
  void follow_soon(int slot);
  void declare_lost(const std::string& reason);
  void report(ChannelEvent::Kind kind, int slot, int from, const std::string& reason,
              bool gray = false);
  void record(LinkEvent::Kind kind, int from, int to, const std::string& reason,
              double detection_ms = 0);
  std::chrono::milliseconds peer_silence(Clock::time_point now) const;

  // ---- heartbeats and channel messages (reliable_link_channel.cpp)
  void tick();
  std::chrono::milliseconds tick_period() const;
  void heard(int slot);
  /// Sends `message` on `slot`'s link (if up), with this side's cumulative acknowledgement.
  void send_on(int slot, ChannelMessage message);
  void send_ack();
  void schedule_ack();
  /// Acts on a receipt's verdict: an acknowledgement now, after this round, or with a tick.
  void ack_when(Receipts::Due due);
  void on_channel(int slot, const transport::FrameHeader& header, const std::string& payload);
  void on_redial_request(int slot, const ChannelMessage& message);

  // ---- health, gray failures, probes (reliable_link_health.cpp)
  /// Per tick: the medium's counters, the health windows, and the gray-failure verdicts.
  void watch_health(Clock::time_point now);
  /// `slot` is up but sick: failed like a dead link (its frames go again on the other).
  void gray_fail(int slot, const std::string& reason);
  /// Per tick: starts a due probe round, fails one past its timeout.
  void probe_tick(Clock::time_point now);
  void send_probe(int slot, uint64_t round, uint64_t total, bool echo);
  /// A probe frame arrived on `slot` (Tap::should_drop): echoed, or the prober's echo.
  void on_probe_frame(int slot, const transport::FrameHeader& header);
  void report_probe(const LinkProbe::Verdict& verdict);
  /// Round trips from `message`'s echo; remembers its stamp for the next echo.
  void on_stamps(int slot, const ChannelMessage& message);
  uint64_t stamp_now() const;
  /// Figures of both links into the recorder (failover_stats()).
  void publish_health();
  /// In-place frame `f` now waits on `slot` (health accounting); -1: on none.
  void count_on(ReplayBuffer::Frame& f, int slot);

  // ---- multi-path (reliable_link_paths.cpp)
  /// Both links carry large frames now: multi-path, both up, proven and admitted.
  bool striping() const;
  /// The link frame `f` goes on: the active one, or under multi-path the one that would deliver
  /// it first.
  int pick_slot(const ReplayBuffer::Frame& f) const;
  /// Posts `pending` on the active link, and under multi-path a large one on the other too,
  /// where it is not posted yet (a stored frame is handed over instead).
  void post_everywhere(PendingReceive* pending);
  void on_proxy_matched(RecvProxy* proxy) override;
  /// `slot` carries large frames again (the supervisor's admit, or the peer's notice).
  void admit(int slot, bool tell_peer);

  // ---- data frames (reliable_link_traffic.cpp)
  void transmit(ReplayBuffer::Frame& frame, int slot);
  void on_proxy_sent(SendProxy* proxy, const Status& status) override;
  void on_acknowledged(uint64_t cumulative, const std::vector<AckRange>& ranges);
  /// Removes `frame` and completes its request once it is acknowledged and no link holds it.
  void maybe_release(ReplayBuffer::Frame& frame);
  /// A new posting of `pending` on `slot`'s link (not yet handed to it).
  RecvProxy* attach_proxy(PendingReceive* pending, int slot);
  /// Withdraws and frees `proxy` (not matched) from its link; false when the link has it no
  /// longer.
  bool withdraw(RecvProxy* proxy);
  void on_proxy_received(RecvProxy* proxy, const Status& status) override;
  /// Frame `seq` of the peer arrived whole (delivered or stored): acknowledged.
  void on_delivered(uint64_t seq, uint8_t flags);
  bool drop_duplicate(int slot, const transport::FrameHeader& header);

  ReliableLinkParams params_;
  std::unique_ptr<EngineScheduler> engine_scheduler_;  // when params_.scheduler is null
  Scheduler& scheduler_;
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
  Scheduler::TimerId tick_timer_ = 0;
  Scheduler::TimerId deadline_timer_ = 0;
  uint64_t next_attempt_ = 0;
  uint64_t switches_ = 0;       // this side's switches, numbered in its notices
  uint64_t peer_switches_ = 0;  // the highest the peer's notices numbered so far
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for deferred tasks
  std::vector<std::unique_ptr<Grave>> graves_;
  struct HeldAbort {
    uint32_t comm_id;
    uint64_t op_seq;
    std::string reason;
  };
  std::vector<HeldAbort> held_aborts_;  // sent while no link was up

  // sending: the frames not acknowledged yet
  ReplayBuffer replay_;
  // receiving
  std::unordered_map<transport::RecvRequest*, std::unique_ptr<PendingReceive>> pending_;
  Receipts receipts_;
  transport::UnexpectedFrames stored_;  // taken over from links that went away
  bool ack_scheduled_ = false;

  // probing (the coordinator, on the supervisor's word)
  LinkProbe probe_;
  Clock::time_point health_published_{};
};

}  // namespace hcomm::failover
