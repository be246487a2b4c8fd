// A peer over RDMA: HCOMM_NUM_QPS reliable-connected queue pairs on one RdmaDevice, messages
// striped over them, SEND/RECV into pre-registered receive slots with credit flow control.
//
// Why SEND/RECV into slots and not RDMA WRITE into the receive buffer: a frame may arrive before
// its receive is posted (the other transports keep it aside; so does this one), and the
// receiver reduces while copying out of the slot (RecvRequest::on_piece), which a write into the
// final buffer could not do. The sender side is zero-copy: an application buffer is registered
// once (MrCache) and the NIC reads it in place.
//
// Wire: every message is [MessageHeader][FrameHeader if it starts a frame][payload piece] in one
// SEND of at most kSlotBytes. Messages carry a per-link sequence number: striped over several
// QPs they may complete out of order, and the receiver processes them in sequence.
//
// Flow control: each QP's peer has kRecvSlots receives posted; a send uses one credit; credits
// come back piggybacked on messages the other way, or in a credit-only message once half the
// slots are owed. One credit is kept back for that message, so two senders never block each
// other. Receive slots are reposted as soon as a message is processed (unmatched frames are
// copied aside), so credits always flow.
//
// Lifecycle: made on the creating thread (QPs in INIT with receives posted) → connect() with the
// peer's queue pair numbers (RTR, RTS) → start() on the engine thread, after every peer is RTS
// (the rendezvous' barrier), so that no message meets a queue pair that cannot receive it.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/frame_assembler.hpp"
#include "transport/frame_stamp.hpp"
#include "transport/link.hpp"
#include "transport/posted_receives.hpp"
#include "transport/progress_engine.hpp"
#include "transport/rdma/rdma_device.hpp"
#include "transport/unexpected_frames.hpp"

namespace hcomm::transport::rdma {

enum class BufferMode { zero_copy, dynamic, fixed };

struct RdmaLinkParams {
  uint32_t comm_id = 0;
  int my_rank = -1;
  int peer = -1;
  int num_qps = 1;
  size_t max_inline = 256;
  int timeout = 14;
  int retry_cnt = 6;
  int traffic_class = 0;
  BufferMode buffers = BufferMode::zero_copy;
};

/// What the peer needs to connect to this side: published at the rendezvous.
struct RdmaEndpoint {
  ibv_gid gid{};
  ibv_mtu mtu = IBV_MTU_1024;
  std::vector<uint32_t> qpns;
  uint32_t psn = 0;

  std::string encode() const;
  static Expected<RdmaEndpoint> decode(const std::string& text);
};

class RdmaLink final : public Link, public Poller, public FdHandler, public AsyncEventListener {
 public:
  using UpCallback = std::function<void(const Status&)>;
  static constexpr size_t kSlotBytes = 64 * 1024;
  static constexpr int kRecvSlots = 16;  // per queue pair
  static constexpr int kSendDepth = 32;  // work requests in flight per queue pair

  /// Creates the queue pairs (INIT, receives posted) and the registered slots.
  static Expected<std::unique_ptr<RdmaLink>> create(std::shared_ptr<RdmaDevice> device,
                                                    RdmaLinkParams params);
  ~RdmaLink() override;

  RdmaEndpoint local_endpoint() const;
  /// Moves the queue pairs to RTR and RTS towards `remote`.
  Status connect(const RdmaEndpoint& remote);
  /// Engine thread: starts serving; `on_up` runs at once.
  void start(ProgressEngine& engine, LinkObserver& observer, std::atomic<uint64_t>* bytes_sent,
             UpCallback on_up);

  int peer() const override { return params_.peer; }
  bool is_up() const override { return up_; }
  const std::string& describe() const override { return name_; }
  LinkCaps caps() const override;
  void post_send(SendRequest* request) override;
  void post_recv(RecvRequest* request) override;
  bool cancel_recv(RecvRequest* request) override;
  std::vector<std::pair<FrameHeader, Payload>> take_stored() override {
    return unexpected_.take_all();
  }
  // AsyncEventListener: the device's events fail the link at once.
  void on_device_fault(const std::string& what) override;
  void on_qp_fault(ibv_qp* qp, const std::string& what) override;
  void close() override;
  void abandon() override;
  const Status& error() const override { return error_; }

  // Poller: the completion queue, polled without a system call while the engine is busy.
  bool poll() override;
  bool prepare_sleep() override;
  // FdHandler: the completion channel, when the engine sleeps.
  void on_events(int fd, uint32_t events) override;

  /// Messages this link copied through staging because the buffer could not be sent in place
  /// (unaligned, hcomm's own memory, or too small to be worth it).
  uint64_t staged_messages() const { return staged_; }
  uint64_t zero_copy_messages() const { return zero_copy_; }

 private:
  void send_control(const FrameHeader& header, std::string payload) override;
  struct MessageHeader;
  struct Outgoing {
    FrameHeader header;
    const std::byte* payload = nullptr;
    SendRequest* request = nullptr;  // null: a control frame (payload in `owned`)
    std::string owned;
    size_t posted = 0;  // payload bytes handed to work requests
    bool header_posted = false;
    int outstanding = 0;  // work requests not completed
    bool zero_copy = false;
    bool notified = false;  // on_sent ran
    MrCache::Handle registration;
  };
  struct SendContext {
    int qp = 0;
    int staging = -1;  // staging slot index, -1: none
    /// The frame this message belongs to (a credit-only message: none), found again at once when
    /// the message completes.
    std::optional<std::list<Outgoing>::iterator> frame;
    std::byte* header = nullptr;  // 128 registered bytes for headers
  };
  struct Held {
    int slot = 0;
    uint32_t bytes = 0;
  };
  /// hcomm's own registered memory (receive slots, staging, headers): page-aligned, registered
  /// directly for the link's lifetime (the static pool), not through the cache.
  struct Region {
    std::byte* base = nullptr;
    size_t bytes = 0;
    ibv_mr* mr = nullptr;
  };

  RdmaLink(std::shared_ptr<RdmaDevice> device, RdmaLinkParams params);
  Status allocate();
  Status add_region(Region& region, size_t bytes);
  Status grow_staging();
  Status post_receive_slot(int slot);
  bool pump_sends();
  /// Posts the next message of `o` on a queue pair that has credit; false when none has.
  bool post_message(std::list<Outgoing>::iterator frame);
  bool post_credits(int qp);
  int pick_qp(bool credit_only);
  int take_staging();
  bool drain_cq();
  void on_send_done(uint64_t context, bool ok);
  void on_receive(int slot, uint32_t bytes);
  void process(int slot, uint32_t bytes);
  void frame_sent(Outgoing& o);
  void maybe_retire(std::list<Outgoing>::iterator it);
  void fail(const Status& status, bool graceful);
  std::string completion_error(const ibv_wc& wc) const;

  std::shared_ptr<RdmaDevice> device_;
  RdmaLinkParams params_;
  std::string name_;
  ProgressEngine* engine_ = nullptr;
  LinkObserver* observer_ = nullptr;
  UpCallback on_up_;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::vector<ibv_qp*> qps_;
  uint32_t psn_ = 0;
  size_t inline_limit_ = 0;
  Region recv_region_;
  std::vector<Region> staging_regions_;  // kStagingPerRegion slots each
  std::vector<std::byte*> staging_slots_;
  std::vector<uint32_t> staging_lkeys_;
  std::vector<int> free_staging_;
  Region header_region_;
  std::vector<SendContext> contexts_;
  std::vector<int> free_contexts_;
  std::vector<int> credits_;      // per qp: receives the peer has posted for us
  std::vector<int> owed_;         // per qp: slots we reposted and not yet told the peer about
  std::vector<int> send_queued_;  // per qp: work requests in flight
  int next_qp_ = 0;
  uint32_t next_send_seq_ = 0;
  uint32_t next_recv_seq_ = 0;
  std::map<uint32_t, Held> held_;  // out-of-sequence messages (striping)
  std::list<Outgoing> sendq_;      // not fully posted first, in order; then waiting completion
  std::list<Outgoing>::iterator next_to_post_;
  PostedReceives posted_;
  UnexpectedFrames unexpected_;
  std::optional<FrameAssembler> frames_;  // from start(), which names the observer
  FrameStamp stamp_;
  uint64_t staged_ = 0;
  uint64_t zero_copy_ = 0;
  bool up_ = false;
  bool started_ = false;
  bool closing_ = false;
  bool peer_closed_ = false;
  bool pumping_ = false;
  bool armed_ = false;  // the CQ is armed for an event
  Status error_;
};

}  // namespace hcomm::transport::rdma
