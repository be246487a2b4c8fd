// transport/: how bytes move between ranks. A Link is one peer as seen from this rank; TCP, shared
// memory and RDMA each implement it, and algorithms see nothing else.
//
// Threading contract: a Link lives on its ProgressEngine's thread. Every method below is called on
// that thread, never blocks, and may invoke request callbacks before it returns (callers must
// tolerate re-entry). Requests are owned by the caller and must stay alive until their callback
// ran.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "hcomm/status.hpp"
#include "transport/frame.hpp"
#include "transport/payload.hpp"

namespace hcomm::transport {

/// A frame to send. `payload` (header.length bytes) is read in place: it must stay unchanged
/// until on_sent() runs.
class SendRequest {
 public:
  FrameHeader header;
  const void* payload = nullptr;
  /// The application buffer `payload` lies in (null: hcomm's own memory). A link that registers
  /// memory with a NIC registers this whole buffer once and sends every frame of it in place.
  const void* buffer = nullptr;
  size_t buffer_bytes = 0;

  /// The payload may be reused (the bytes are handed to the medium), or the send failed.
  virtual void on_sent(const Status& status) = 0;

 protected:
  ~SendRequest() = default;
};

/// A posted receive for one frame.
class RecvRequest {
 public:
  MatchKey key;

  /// Checks a matching frame's header against what this rank expects (sizes, operation, type).
  /// A non-OK status rejects the frame: its payload is dropped and on_received() gets the status.
  virtual Status accept(const FrameHeader& header) = 0;
  /// Where the payload goes when it is simply stored (zero copy from the medium); nullptr makes
  /// the link hand it over in pieces through on_piece() (e.g. to reduce while receiving).
  virtual void* destination() = 0;
  /// Pieces arrive in order; each (but the last) is a multiple of piece_granularity() bytes.
  virtual void on_piece(size_t offset, const void* data, size_t bytes) = 0;
  virtual size_t piece_granularity() const = 0;
  /// The payload bytes this receive expects, when known (0: not known). A hint only: a link that
  /// spreads large frames over several paths (failover's multi-path) waits for such a frame on
  /// every path; the frame's own header stays what accept() judges.
  virtual size_t expected_bytes() const { return 0; }
  /// The whole payload arrived (or the receive failed).
  virtual void on_received(const Status& status) = 0;

 protected:
  ~RecvRequest() = default;
};

/// What a link reports to the layer above it (the schedule executor of its communicator).
class LinkObserver {
 public:
  /// A peer aborted operation `op_seq` with `reason`.
  virtual void on_remote_abort(int peer, uint32_t comm_id, uint64_t op_seq,
                               const std::string& reason) = 0;
  /// A data frame's header has arrived: true when its payload is to be dropped (its operation
  /// was aborted here, or the reliable channel delivered it already). Every data frame a link
  /// receives passes here first, which is what the keep-alive counts as a sign of life.
  virtual bool should_drop(const FrameHeader& header) = 0;
  /// A data frame arrived whole before its receive was posted and is kept until it is.
  virtual void on_frame_stored(int peer, const FrameHeader& header) {
    (void)peer;
    (void)header;
  }
  /// A FrameKind::channel frame arrived (the reliable channel's heartbeats, acknowledgements,
  /// ...). Links pass them on unread.
  virtual void on_channel_frame(int peer, const FrameHeader& header, const std::string& payload) {
    (void)peer;
    (void)header;
    (void)payload;
  }
  /// The link failed for good; posted requests have already been failed with `status`.
  /// `graceful`: the peer said goodbye (destroyed its communicator) before closing.
  virtual void on_link_failed(int peer, const Status& status, bool graceful) = 0;

 protected:
  ~LinkObserver() = default;
};

/// What a link can do; queried, not discovered by failure.
struct LinkCaps {
  const char* medium = "";            ///< "tcp", "shm", "rdma"
  size_t max_frame_bytes = 0;         ///< largest payload of one frame
  bool one_sided = false;             ///< supports remote writes without a posted receive
  bool detects_peer_failure = false;  ///< reports a dead peer by itself (EOF, RST, CQ error)
};

/// What a link counts about its delivery since it was made, for the reliable channel's link
/// health (failover/link_health.hpp). Counters only grow.
struct MediumCounters {
  /// What arrived: payload bytes of the peer's data frames, and the time during which one of
  /// them was arriving (its header in, its payload not yet whole) — their ratio is the rate the
  /// link delivers at while the peer sends. Every medium's link counts these (FrameRouter).
  uint64_t bytes_received = 0;
  uint64_t receiving_us = 0;
  /// What the medium itself counts (false: nothing, the fields below are 0).
  bool valid = false;
  uint64_t packets_sent = 0;  ///< segments (TCP) or packets (RDMA) sent
  uint64_t retransmits = 0;   ///< of them sent again after a loss (TCP_INFO, RDMA retries)
  uint64_t errors = 0;        ///< the port's error counters (CRC, symbol errors, ...), summed
  double rtt_us = 0;          ///< the medium's own smoothed round trip (TCP); 0: none
};

/// The largest payload of a channel or abort frame.
constexpr size_t kMaxChannelPayload = 4096;

class Link {
 public:
  virtual ~Link() = default;
  virtual int peer() const = 0;
  /// Established and not failed or closed.
  virtual bool is_up() const = 0;
  /// "tcp 127.0.0.1:40123 (rank 3)": for every log line and error about this peer.
  virtual const std::string& describe() const = 0;
  virtual LinkCaps caps() const = 0;
  /// Queues a frame; fills header.link_seq. A failed link fails the request at once.
  virtual void post_send(SendRequest* request) = 0;
  /// Posts a receive; consumes a matching frame that arrived earlier. A failed link fails it at
  /// once.
  virtual void post_recv(RecvRequest* request) = 0;
  /// Removes a posted receive that has not started to receive; false when it is not posted.
  virtual bool cancel_recv(RecvRequest* request) = 0;
  /// Sends an abort frame for `op_seq` carrying `reason` (best effort).
  virtual void send_abort(uint32_t comm_id, uint64_t op_seq, const std::string& reason) {
    FrameHeader h;
    h.kind = static_cast<uint8_t>(FrameKind::abort);
    h.comm_id = comm_id;
    h.op_seq = op_seq;
    send_control(h, reason.substr(0, kMaxChannelPayload));
  }
  /// Sends a FrameKind::channel frame with `header`'s communicator, op_seq, step, chunk, offset
  /// and flags and `payload` (at most kMaxChannelPayload bytes), best effort: dropped when the
  /// link is not up.
  virtual void send_channel(const FrameHeader& header, std::string payload) {
    FrameHeader h = header;
    h.kind = static_cast<uint8_t>(FrameKind::channel);
    send_control(h, std::move(payload));
  }
  /// Hands over the frames that arrived before their receive was posted (stored, see
  /// LinkObserver::on_frame_stored); they are no longer this link's.
  virtual std::vector<std::pair<FrameHeader, Payload>> take_stored() { return {}; }
  /// Marks the link's packets from now on: `tos` is the IP TOS byte (DSCP << 2). Media that
  /// cannot change it on a live link (RDMA sets it per queue pair) ignore it.
  virtual void set_traffic_class(int tos) { (void)tos; }
  /// Has the medium spread what it sends at no more than `bytes_per_second` (0: no limit), for
  /// QoS; media that cannot (shared memory) ignore it.
  virtual void set_pacing_rate(double bytes_per_second) { (void)bytes_per_second; }
  /// True while the link has stopped reading from the peer because a large frame waits for its
  /// receive to be posted here: silence from the peer is then no sign of a fault.
  virtual bool holds_unmatched() const { return false; }
  /// The medium's delivery counters (see MediumCounters); cheap enough to call every few tens
  /// of milliseconds (a system call per connection at most).
  virtual MediumCounters medium_counters() const { return {}; }
  /// Says goodbye and closes; later posts fail with HCOMM_ERR_ABORTED.
  virtual void close() = 0;
  /// Stops every transfer at once, without a goodbye and without telling the observer: posted
  /// requests fail, nothing is read or written after this returns (the medium stops touching
  /// the requests' memory). For a link that is being replaced (failover).
  virtual void abandon() = 0;
  /// The first error this link failed with; OK while healthy.
  virtual const Status& error() const = 0;

 protected:
  /// A medium's one way to send a frame of the link's own (abort, channel, goodbye) carrying
  /// `payload`: queued behind the data, dropped when the link is not up. A link that is no
  /// medium (failover's ReliableLink) overrides send_abort() and send_channel() instead.
  virtual void send_control(const FrameHeader& header, std::string payload) {
    (void)header;
    (void)payload;
  }
};

}  // namespace hcomm::transport
