// hcomm public API: a communicator — a group of ranks that run collectives and point-to-point
// operations together.
//
// Semantics follow MPI/NCCL: every rank of a communicator calls the same collectives in the same
// order with matching sizes; `count` is in elements of `dtype`. Out-of-place and in-place
// (send == recv) forms are both supported. Buffers must stay valid until the Work completes.
// Bad arguments never crash: the returned Work completes with HCOMM_ERR_INVALID_ARG, and for a
// collective the other ranks' matching operation fails with the same code naming this rank.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hcomm/config.hpp"
#include "hcomm/qos.hpp"
#include "hcomm/status.hpp"
#include "hcomm/types.hpp"
#include "hcomm/work.hpp"

namespace hcomm {

namespace api {
class CommunicatorImpl;
}

/// One send or receive of a batch (Communicator::batch_async): NCCL's grouped send/recv.
struct HCOMM_API PointToPointOp {
  enum class Kind { send, recv };
  Kind kind = Kind::send;
  void* buf = nullptr;  ///< read for a send, written for a receive
  size_t count = 0;
  DataType dtype = DataType::uint8;
  int peer = -1;
  int tag = 0;
};

/// What a communicator knows of one of its ranks (for tools such as hcomm-info).
struct HCOMM_API RankInfo {
  int rank = -1;
  std::string host;     ///< hostname
  std::string host_id;  ///< equal exactly for ranks on one host (HCOMM_HOST_ID overrides)
  std::string address;  ///< where it listens
  /// What carries traffic to it now: "self", "shm", "rdma", "tcp", an application protocol's
  /// name, or "tcp-fallback" while the link supervisor has moved it to its fallback link;
  /// "none" while no link to it is up, "lost" once it is lost (HCOMM_ERR_PEER_LOST).
  std::string transport;
  std::string primary_transport;  ///< the protocol chosen at creation ("self" for itself)
  int ring_position = -1;         ///< its place in the topology-aware order of rings and chains
  uint64_t bytes_sent = 0;        ///< payload bytes this rank has sent to it so far (0 for itself)
};

/// One thing the link supervisor did or saw (Communicator::failover_stats()).
struct HCOMM_API LinkEvent {
  enum class Kind {
    failover,           ///< traffic moved from the primary link to the fallback
    failback,           ///< traffic moved back to the primary link
    link_down,          ///< a link that carried no traffic failed (it will be reconnected)
    reconnect_attempt,  ///< a link is being made again
    reconnected,        ///< ... and is up
    pinned,             ///< too many failovers: the peer stays on its fallback
    peer_lost,          ///< every link down past HCOMM_PEER_TIMEOUT_MS: the peer is gone
  };
  std::chrono::system_clock::time_point when;
  int peer = -1;
  Kind kind = Kind::failover;
  std::string from;  ///< the link traffic left (or the link concerned): "rdma", "tcp-fallback", ...
  std::string to;    ///< the link traffic moved to ("" when none)
  std::string reason;
  /// failover and peer_lost: how long after the peer's last sign of life the fault was decided.
  double detection_ms = 0;
};
/// "failover", "failback", ...
HCOMM_API const char* link_event_name(LinkEvent::Kind kind);

/// One link of a peer's reliable channel as its health measurement sees it now
/// (Communicator::failover_stats(); README "Failover", "Link health"). Rates in Gbit/s of
/// payload; 0 where nothing was measured yet.
struct HCOMM_API LinkHealthInfo {
  int peer = -1;
  std::string link;  ///< "tcp", "rdma", "tcp-fallback", ...: what the link is
  /// "active" (carries the traffic), "multipath" (carries its share of large frames),
  /// "standby" (up, healthy, idle), "probation" (up again, probed before it carries traffic),
  /// "connecting", "down"
  std::string state;
  /// The peer's frames: the rate they arrived at over the last window (bytes over the time
  /// during which one was arriving), that time's share of the window, the best window while
  /// healthy.
  double goodput_in_gbps = 0;
  double busy_in_share = 0;
  double healthy_in_gbps = 0;
  /// This rank's large frames: the best delivery rate (acknowledged bytes over time) of the
  /// last window, and the best of any.
  double goodput_out_gbps = 0;
  double healthy_out_gbps = 0;
  double probe_gbps = 0;  ///< the last data-path probe round (both ways)
  double rtt_us = 0;      ///< smoothed round trip of the reliable channel's messages
  double min_rtt_us = 0;
  double medium_rtt_us = 0;   ///< the medium's own (TCP_INFO)
  double loss = 0;            ///< share of the window's packets the medium sent again
  uint64_t packets_sent = 0;  ///< counted by the medium, every link of this slot together
  uint64_t retransmits = 0;   ///< TCP retransmissions, RDMA retries
  uint64_t errors = 0;        ///< the port's error counters (RDMA: CRC, symbol errors, ...)
  uint64_t bytes_in = 0;      ///< data payload that arrived on this link
  uint64_t bytes_acked = 0;   ///< large-frame payload the peer acknowledged on this link
};

/// What the link supervisors of one communicator did (counters since creation).
struct HCOMM_API FailoverStats {
  uint64_t failovers = 0;
  uint64_t failbacks = 0;
  uint64_t reconnect_attempts = 0;
  uint64_t reconnects = 0;
  uint64_t peers_lost = 0;
  uint64_t frames_replayed = 0;     ///< unacknowledged frames sent again on a new link
  uint64_t bytes_replayed = 0;      ///< their payload bytes
  uint64_t duplicates_dropped = 0;  ///< frames that arrived twice and were delivered once
  uint64_t gray_failures = 0;       ///< links failed for being sick (goodput, loss, latency)
  uint64_t probe_rounds = 0;        ///< data-path probe rounds judged, and of them passed
  uint64_t probes_passed = 0;
  std::vector<LinkEvent> events;      ///< oldest first; the last 4096
  std::vector<LinkHealthInfo> links;  ///< two per peer with a reliable channel, by peer
};

/// What this rank's data frames carried since the communicator was created (payload: the
/// elements as the application has them; wire: what the frames held after their codec).
struct CompressionStats {
  uint64_t frames = 0;
  uint64_t compressed_frames = 0;
  uint64_t payload_bytes = 0;
  uint64_t wire_bytes = 0;
};

class HCOMM_API Communicator {
 public:
  /// Joins the world: meets the other ranks at the rendezvous root, connects to every peer and
  /// returns once all links are up. Collective over all `cfg.world_size` ranks. Fails with
  /// HCOMM_ERR_TIMEOUT naming the ranks that never arrived after `cfg.connect_timeout`.
  static Expected<std::unique_ptr<Communicator>> create(const Config& cfg);
  /// Same, with Config::from_env().
  static Expected<std::unique_ptr<Communicator>> create_from_env();

  /// Fails the operations still in flight with HCOMM_ERR_ABORTED and closes the links.
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  const Config& config() const;

  // ---- asynchronous forms
  Work allreduce_async(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op);
  /// `buf` is read on `root` and written everywhere else.
  Work broadcast_async(void* buf, size_t count, DataType dtype, int root);
  /// The reduction lands in `recv` on `root` only; other ranks may pass recv = nullptr.
  Work reduce_async(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                    int root);
  /// `recv` holds size() * count elements, rank i's block at offset i * count.
  /// In place: send == recv + rank() * count elements.
  Work allgather_async(const void* send, void* recv, size_t count, DataType dtype);
  /// Rank i contributes recv_counts[i] elements (this rank: recv_counts[rank()] from `send`),
  /// placed at recv + recv_displs[i] elements. Both vectors have size() entries on every rank.
  Work allgatherv_async(const void* send, void* recv, const std::vector<size_t>& recv_counts,
                        const std::vector<size_t>& recv_displs, DataType dtype);
  /// `send` holds size() * recv_count elements; rank i receives block i reduced over all ranks.
  /// In place (NCCL's convention): recv == send + rank() * recv_count elements.
  Work reduce_scatter_async(const void* send, void* recv, size_t recv_count, DataType dtype,
                            ReduceOp op);
  /// Block i of `send` (count elements) goes to rank i; block i of `recv` comes from rank i.
  Work alltoall_async(const void* send, void* recv, size_t count, DataType dtype);
  /// send_counts[i] elements at send + send_displs[i] go to rank i; recv_counts[i] elements from
  /// rank i land at recv + recv_displs[i]. recv_counts[i] must equal rank i's send_counts[me].
  Work alltoallv_async(const void* send, const std::vector<size_t>& send_counts,
                       const std::vector<size_t>& send_displs, void* recv,
                       const std::vector<size_t>& recv_counts,
                       const std::vector<size_t>& recv_displs, DataType dtype);
  /// `root` receives size() * count elements, rank i's block at offset i * count; other ranks
  /// may pass recv = nullptr. In place on the root: send == recv + root * count elements.
  Work gather_async(const void* send, void* recv, size_t count, DataType dtype, int root);
  /// Rank i receives block i of root's `send` (size() * count elements); other ranks may pass
  /// send = nullptr. In place on the root: recv == send + root * count elements.
  Work scatter_async(const void* send, void* recv, size_t count, DataType dtype, int root);
  Work barrier_async();
  /// Messages between one pair of ranks with the same tag arrive in the order they were sent.
  Work send_async(const void* buf, size_t count, DataType dtype, int peer, int tag = 0);
  /// `peer` = kAnySource (MPI_ANY_SOURCE): the first message with `tag` to arrive from any rank
  /// that no receive naming its source has taken; Work::source() says whose. Receives from any
  /// source are matched in the order they were posted; one naming a source that is posted before
  /// a message arrives takes it first. Such a receive waits for a message, the communicator's
  /// abort or its destruction (HCOMM_ERR_ABORTED), not for a peer's loss.
  Work recv_async(void* buf, size_t count, DataType dtype, int peer, int tag = 0);
  static constexpr int kAnySource = -1;
  /// Starts every send and receive of `ops` at once (so exchanges in any pattern cannot
  /// deadlock) and completes when all have; the first failure is the batch's status. Unlike
  /// send/recv, a batch may send to and receive from this rank (NCCL's groups allow it): the
  /// k-th send to self with a tag meets the k-th receive from self with that tag.
  Work batch_async(const std::vector<PointToPointOp>& ops);

  // ---- blocking forms: the asynchronous form, waited on for config().op_timeout
  Status allreduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op);
  Status broadcast(void* buf, size_t count, DataType dtype, int root);
  Status reduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op, int root);
  Status allgather(const void* send, void* recv, size_t count, DataType dtype);
  Status allgatherv(const void* send, void* recv, const std::vector<size_t>& recv_counts,
                    const std::vector<size_t>& recv_displs, DataType dtype);
  Status reduce_scatter(const void* send, void* recv, size_t recv_count, DataType dtype,
                        ReduceOp op);
  Status alltoall(const void* send, void* recv, size_t count, DataType dtype);
  Status alltoallv(const void* send, const std::vector<size_t>& send_counts,
                   const std::vector<size_t>& send_displs, void* recv,
                   const std::vector<size_t>& recv_counts, const std::vector<size_t>& recv_displs,
                   DataType dtype);
  Status gather(const void* send, void* recv, size_t count, DataType dtype, int root);
  Status scatter(const void* send, void* recv, size_t count, DataType dtype, int root);
  Status barrier();
  Status send(const void* buf, size_t count, DataType dtype, int peer, int tag = 0);
  Status recv(void* buf, size_t count, DataType dtype, int peer, int tag = 0);
  Status batch(const std::vector<PointToPointOp>& ops);

  /// The algorithm ("ring", "tree", "rd", "hd", "direct", "hier", or "slot" for the slot board of a
  /// one-host communicator, "staged" for its larger allreduces; "" for an unknown name) this
  /// communicator runs for `op_name` ("allreduce", "broadcast", ...) with `bytes` = count x element
  /// size as passed to that operation (allgather, gather, scatter: one rank's block; alltoall: one
  /// peer's block; reduce_scatter: the received block): the cost model's choice, or what
  /// HCOMM_ALGO forces. For tools and logs.
  std::string algorithm_for(const std::string& op_name, size_t bytes) const;
  /// Every rank of the communicator, by rank.
  std::vector<RankInfo> ranks() const;

  // ---- compression (README: "Compression")
  /// Any thread: the codec of the operations started from now on (the one at creation is
  /// Config::compression). Ranks may differ: a receiver decodes whatever a frame holds.
  void set_compression(Compression mode);
  Compression compression() const;
  /// The mode this thread's next operation on this communicator uses (its innermost
  /// CompressionScope's, else compression()).
  Compression compression_in_force() const;
  /// The per-operation override: while a scope lives, the operations its thread starts on
  /// `comm` use `mode` instead of the communicator's. Scopes nest; destroy them in reverse
  /// order of creation, on the thread that made them.
  class HCOMM_API CompressionScope {
   public:
    CompressionScope(Communicator& comm, Compression mode);
    ~CompressionScope();
    CompressionScope(const CompressionScope&) = delete;
    CompressionScope& operator=(const CompressionScope&) = delete;

   private:
    const Communicator* comm_;
    Compression mode_;
    const CompressionScope* outer_;
    friend class Communicator;
  };
  /// What a frame of `bytes` bytes of `dtype` elements to `peer` would travel as under the mode
  /// in force for this thread, and why: "zstd: forced (HCOMM_COMPRESSION=zstd)", "none: auto
  /// never compresses within a host", ... For tools and logs (the DEBUG log says the same).
  std::string compression_for(size_t bytes, DataType dtype, int peer) const;
  /// Any thread: what the frames this rank sent carried (see CompressionStats).
  CompressionStats compression_stats() const;

  // ---- QoS (hcomm/qos.hpp)
  /// Any thread: this communicator's traffic class from now on (the class at creation is
  /// Config::qos). HCOMM_ERR_INVALID_ARG when a field is out of range, or when the minimums of
  /// every class on this host would add up to more than 100%.
  Status set_qos(const QosClass& qos);
  QosClass qos() const;

  // ---- faults (README: "Failover")
  /// Any thread: what the link supervisors did so far.
  FailoverStats failover_stats() const;
  using LinkEventCallback = std::function<void(const LinkEvent&)>;
  /// Any thread: `callback` hears of every LinkEvent from now on, as failover_stats() records
  /// it (nullptr: no more), replacing the previous callback. It runs on hcomm's progress engine
  /// thread, which it must not block; it must not call into this communicator.
  void on_link_event(LinkEventCallback callback);
  /// Ranks this rank has declared lost (HCOMM_ERR_PEER_LOST), ascending.
  std::vector<int> lost_peers() const;
  /// Any thread, never blocks: every operation in flight and every later one completes with
  /// HCOMM_ERR_ABORTED carrying `reason`, and the peers' operations on this communicator fail
  /// too instead of waiting. Destroy the communicator afterwards (or shrink() it).
  void abort(const std::string& reason = "the application aborted the communicator");
  /// Collective over the surviving ranks (like ncclCommShrink / MPI_Comm_shrink): a new
  /// communicator of every rank not lost, numbered in the order of their ranks here, connected
  /// afresh (it no longer needs rank 0's rendezvous). Every survivor must call it; a rank lost
  /// during the call fails it with HCOMM_ERR_PEER_LOST (call it again). This communicator stays
  /// usable for nothing but destruction.
  Expected<std::unique_ptr<Communicator>> shrink();

 private:
  explicit Communicator(std::unique_ptr<api::CommunicatorImpl> impl);
  std::unique_ptr<api::CommunicatorImpl> impl_;
};

}  // namespace hcomm
