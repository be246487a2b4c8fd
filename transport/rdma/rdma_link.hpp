// A peer over RDMA: frames striped over a QueuePairSet's queue pairs as SEND/RECV messages into
// pre-registered receive slots, with credit flow control.
//
// Why SEND/RECV into slots and not RDMA WRITE into the receive buffer: a frame may arrive before
// its receive is posted (the other transports keep it aside; so does this one), and the
// receiver reduces while copying out of the slot (RecvRequest::on_piece), which a write into the
// final buffer could not do. The sender side is zero-copy: an application buffer is registered
// once (MrCache) and the NIC reads it in place.
//
// Wire: every message is [MessageHeader][FrameHeader if it starts a frame][payload piece] in one
// SEND of at most kSlotBytes. Messages carry a per-link sequence number: striped over several
// queue pairs they may complete out of order, and the receiver processes them in sequence.
//
// Flow control: each queue pair's peer has kRecvSlots receives posted; a send uses one credit;
// credits come back piggybacked on messages the other way, or in a credit-only message once half
// the slots are owed. One credit is kept back for that message, so two senders never block each
// other. Receive slots are reposted as soon as a message is processed (unmatched frames are
// copied aside), so credits always flow.
//
// Made on the engine thread by RdmaProtocol::create_link() from queue pairs that every peer has
// connected (the rendezvous' barrier), so that no message meets a queue pair that cannot receive.
#pragma once

#include <infiniband/verbs.h>

#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hcomm/config.hpp"
#include "transport/medium_link.hpp"
#include "transport/progress_engine.hpp"
#include "transport/rdma/mr_cache.hpp"
#include "transport/rdma/queue_pairs.hpp"

namespace hcomm::transport::rdma {

class RdmaLink final : public MediumLink,
                       public Poller,
                       public FdHandler,
                       public AsyncEventListener {
 public:
  static constexpr size_t kSlotBytes = QueuePairSet::kSlotBytes;

  /// Takes over connected queue pairs; registers its send memory, then starts serving: `on_up`
  /// runs before this returns (HCOMM_ERR_OUT_OF_MEM or the device's error when the memory could
  /// not be registered).
  RdmaLink(ProgressEngine& engine, LinkObserver& observer, Identity id,
           std::unique_ptr<QueuePairSet> qps, RdmaBufferMode buffers, UpCallback on_up);
  ~RdmaLink() override;

  LinkCaps caps() const override;
  /// The device port's counters (RdmaDevice::port_counters()).
  MediumCounters delivery_counters() const override;
  // AsyncEventListener: the device's events fail the link at once.
  void on_device_fault(const std::string& what) override;
  void on_qp_fault(ibv_qp* qp, const std::string& what) override;

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
  struct MessageHeader;
  struct Outgoing {
    FrameHeader header;  // a copy: a ControlFrame is gone once its on_sent() ran
    const std::byte* payload = nullptr;
    SendRequest* request = nullptr;
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

  // MediumLink
  void send_frame(SendRequest* request) override;
  std::vector<SendRequest*> stop() override;

  Status allocate();
  Status grow_staging();
  bool pump_sends();
  /// Posts the next message of `frame` on a queue pair that has credit; false when none has.
  bool post_message(std::list<Outgoing>::iterator frame);
  bool post_credits(int qp);
  /// Posts `wr` on queue pair `qp`; fails the link when the device refuses.
  bool post(int qp, ibv_send_wr& wr);
  int pick_qp(bool credit_only);
  int take_staging();
  bool drain_cq();
  void on_send_done(uint64_t context, bool ok);
  void on_receive(int slot, uint32_t bytes);
  void process(int slot, uint32_t bytes);
  void frame_sent(Outgoing& o);
  void maybe_retire(std::list<Outgoing>::iterator it);
  std::string completion_error(const ibv_wc& wc) const;

  ProgressEngine& engine_;
  std::unique_ptr<QueuePairSet> qps_;
  const RdmaBufferMode buffers_;                   // how payloads reach the NIC
  std::vector<RegisteredRegion> staging_regions_;  // kStagingPerRegion slots each
  std::vector<std::byte*> staging_slots_;
  std::vector<uint32_t> staging_lkeys_;
  std::vector<int> free_staging_;
  RegisteredRegion header_region_;
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
  IncomingFrame incoming_;
  uint64_t staged_ = 0;
  uint64_t zero_copy_ = 0;
  bool serving_ = false;  // registered with the engine
  bool pumping_ = false;
  bool armed_ = false;  // the CQ is armed for an event
};

}  // namespace hcomm::transport::rdma
