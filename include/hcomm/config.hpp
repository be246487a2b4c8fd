// hcomm public API: configuration.
//
// Precedence is code > environment > defaults: Config::from_env() returns the defaults overridden
// by HCOMM_* variables, and an application then sets whatever fields it wants to fix in code.
// Every variable, its default and what it accepts are listed once, in core/config_vars.cpp
// (`hcomm-info --config` prints that list; the README's "Configuration" table is checked
// against it); the defaults below are the same values, and a unit test keeps them so.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "hcomm/qos.hpp"
#include "hcomm/status.hpp"

namespace hcomm {

/// HCOMM_FAILOVER: which peers get a reliable channel with a TCP fallback link (Config::failover).
enum class FailoverMode {
  automatic,  ///< "auto": every RDMA and TCP peer; shared memory is left as it is
  on,         ///< "on": shared-memory peers too
  off,        ///< "off": none; a link fault fails the operations on it (HCOMM_ERR_TRANSPORT)
};

/// HCOMM_MULTIPATH: whether large frames to a peer use its primary and fallback links at once
/// (Config::multipath).
enum class MultipathMode {
  automatic,  ///< "auto": when the fallback is a second fabric interface (HCOMM_SOCKET_IFNAME
              ///< lists two), not on a management network (HCOMM_FALLBACK_IFNAME)
  on,         ///< "on": whenever both links are up and healthy
  off,        ///< "off": never; the fallback carries traffic only after a failover
};

/// HCOMM_RDMA_BUFFERS: how payloads reach the NIC (Config::rdma_buffers).
enum class RdmaBufferMode {
  zero_copy,  ///< "zero_copy": buffers on a 4 KiB boundary are registered and sent in place
  dynamic,    ///< "dynamic": copied through a registered pool that grows on demand
  fixed,      ///< "static": copied through a fixed pre-registered pool
};

/// HCOMM_COMPRESSION: how payloads travel (Config::compression, Communicator::set_compression;
/// README "Compression"). The lossy codecs apply to float32 and float64 payloads, the lossless
/// ones to every type; a frame smaller than Config::comp_threshold, and one that would not
/// shrink, travels as it is. The receiver decodes whatever a frame says it holds, so ranks with
/// different settings still get right results.
enum class Compression : uint8_t {
  none,       ///< "none": payloads travel as they are
  fp16,       ///< "fp16": rounded to IEEE binary16 (half the bytes; reduced in full precision)
  bf16,       ///< "bf16": rounded to bfloat16 (half the bytes; float32's range)
  delta,      ///< "delta": lossless, only what changed since the stream's previous payload
  zstd,       ///< "zstd": lossless, bytes grouped by significance, then zstd level 1
  automatic,  ///< "auto": lossless zstd where the link is slower than the codec; never on shm
};

/// The variable's spelling of the mode: "auto", "on", "off".
HCOMM_API const char* to_string(FailoverMode mode);
HCOMM_API const char* to_string(MultipathMode mode);
/// The variable's spelling of the mode: "zero_copy", "dynamic", "static".
HCOMM_API const char* to_string(RdmaBufferMode mode);
/// The variable's spelling: "none", "fp16", "bf16", "delta", "zstd", "auto".
HCOMM_API const char* to_string(Compression mode);
/// Reads that spelling; false for anything else.
HCOMM_API bool parse_compression(const char* text, Compression* out);

struct HCOMM_API Config {
  // ---- who am I (HCOMM_RANK / RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID, and the SIZE twins)
  int rank = -1;        ///< required; -1 = not set
  int world_size = -1;  ///< required; -1 = not set
  /// "host:port" of rank 0's rendezvous store (HCOMM_ROOT_ADDR, or MASTER_ADDR + MASTER_PORT).
  /// Default "127.0.0.1:29500".
  std::string root_addr = "127.0.0.1:29500";
  /// Network interface whose IPv4 address this rank listens on and publishes
  /// (HCOMM_SOCKET_IFNAME). Empty: the root address's interface when it is local, else the first
  /// non-loopback interface that is up. Two, "eth1,eth2": the primary links on the first, the
  /// fallback links on the second (unless HCOMM_FALLBACK_IFNAME names another), and under
  /// HCOMM_MULTIPATH=auto large frames on both.
  std::string socket_ifname;

  // ---- transport
  /// HCOMM_TRANSPORT: "auto" (per peer the most preferred protocol that reaches it: shared memory
  /// on this host, else RDMA when both ranks have a device, else TCP), or one protocol's name for
  /// every peer: "shm" (every rank must be on this host), "rdma" (fails with
  /// HCOMM_ERR_NO_DEVICE without a device), "tcp", or a protocol the application registered
  /// (hcomm/protocol.hpp). Compare with auto_transport(), not with the text.
  std::string transport = kAutoTransport;
  static constexpr const char* kAutoTransport = "auto";
  /// Whether `transport` leaves the choice to hcomm, per peer ("auto").
  bool auto_transport() const { return transport == kAutoTransport; }
  size_t send_buf_size = 0;  ///< HCOMM_SEND_BUF_SIZE: SO_SNDBUF in bytes, 0 = kernel default
  size_t recv_buf_size = 0;  ///< HCOMM_RECV_BUF_SIZE: SO_RCVBUF in bytes, 0 = kernel default
  int sockets_per_peer = 1;  ///< HCOMM_SOCKETS_PER_PEER: TCP connections per peer (1..16)
  /// HCOMM_TCP_CONGESTION: TCP congestion control for hcomm's sockets; "" keeps the kernel's.
  /// CUBIC by default: BBR's pacing stretches every large transfer of a collective.
  std::string tcp_congestion = "cubic";
  // ---- RDMA (RoCEv2 through rdma-core)
  /// HCOMM_RDMA_DEVICE: the device, e.g. "rxe0" or "mlx5_0". Empty: the first device with an
  /// active port that has an IPv4 RoCEv2 GID.
  std::string rdma_device;
  /// HCOMM_RDMA_GID_INDEX: the GID to use; -1 = the port's IPv4 RoCEv2 GID.
  int rdma_gid_index = -1;
  /// HCOMM_NUM_QPS: reliable-connected queue pairs per peer (1..16); messages are striped over
  /// them.
  int num_qps = 1;
  /// HCOMM_MAX_INLINE: messages up to this many bytes (headers included) are copied into the
  /// work request (IBV_SEND_INLINE) instead of being read from registered memory; capped by what
  /// the device supports.
  size_t max_inline = 256;
  /// HCOMM_RDMA_TIMEOUT: local ACK timeout, 4.096 us * 2^n (1..31).
  int rdma_timeout = 14;
  /// HCOMM_RDMA_RETRY_CNT: transport retries before a send fails (0..6). 7 would mean "retry
  /// forever" on some devices (rdma_rxe), so that a dead path is never reported: refused.
  int rdma_retry_cnt = 6;
  /// HCOMM_RDMA_TRAFFIC_CLASS: the IP traffic class (DSCP << 2 | ECN) of RoCE packets (0..255);
  /// 0: the QoS class's marking (CS<priority>).
  int rdma_traffic_class = 0;
  /// HCOMM_RDMA_BUFFERS: how payloads reach the NIC. zero_copy: application buffers that start
  /// on a 4 KiB boundary are registered on first use and cached (others are copied through
  /// registered staging); dynamic: always copied through a registered pool that grows on
  /// demand; fixed ("static"): copied through a fixed pre-registered pool (senders wait for a
  /// slot).
  RdmaBufferMode rdma_buffers = RdmaBufferMode::zero_copy;
  /// HCOMM_RDMA_PIN_BUDGET_MB (in MiB): bytes the registration cache may keep pinned per device.
  size_t rdma_pin_budget = size_t{1} << 30;

  /// HCOMM_CHUNK_SIZE: pipelining unit of collectives (64 B..1 GiB); 0 = chosen per operation by
  /// the cost model.
  size_t chunk_bytes = 0;

  // ---- algorithms
  /// HCOMM_ALGO: forces algorithms, e.g. "allreduce=ring;broadcast=tree", or one name for every
  /// operation that has it ("tree"). Names: ring, tree, rd, hd, direct, hier, auto. Empty: the
  /// cost model chooses per operation, message size and world size.
  std::string algo;
  /// HCOMM_TOPO_FILE: hosts' switches and racks (format in the README); rings follow it.
  std::string topo_file;
  /// HCOMM_CALIBRATE (1/0): measure link latency, bandwidth and reduction speed when a
  /// communicator is created (a few ms), for the cost model; 0 uses built-in loopback-TCP figures.
  bool calibrate = true;

  // ---- compression (README: "Compression")
  /// HCOMM_COMPRESSION: the communicator's codec for payloads (changeable at run time with
  /// Communicator::set_compression, per operation with Communicator::CompressionScope).
  Compression compression = Compression::none;
  /// HCOMM_COMP_THRESHOLD: frames smaller than this many bytes travel uncompressed.
  size_t comp_threshold = 1024;
  /// HCOMM_COMP_ERROR_FEEDBACK (1/0): with fp16/bf16, keep each stream's rounding error and add
  /// it to the next payload of the same stream (error feedback); off by default.
  bool comp_error_feedback = false;

  // ---- deadlines
  /// HCOMM_CONNECT_TIMEOUT_MS: joining the rendezvous and connecting to every peer. This and the
  /// other *_MS variables take whole milliseconds, at least 1.
  std::chrono::milliseconds connect_timeout{30000};
  /// HCOMM_TIMEOUT_MS: how long the blocking forms (Communicator::allreduce, ...) wait.
  std::chrono::milliseconds op_timeout{300000};

  // ---- failover (README: "Failover")
  /// HCOMM_FAILOVER: automatic ("auto") gives every RDMA and TCP peer a reliable channel with a
  /// TCP fallback link (shared memory between the processes of one host is left as it is); on
  /// also shared memory; off none: a link fault then fails the operations on it with
  /// HCOMM_ERR_TRANSPORT.
  FailoverMode failover = FailoverMode::automatic;
  /// HCOMM_FALLBACK_IFNAME: interface of the fallback TCP links (e.g. a management network).
  /// Empty: HCOMM_SOCKET_IFNAME's second interface when it lists two, else the one the
  /// communicator listens on.
  std::string fallback_ifname;
  /// HCOMM_KEEPALIVE_MS: a link that sent nothing for this long sends a heartbeat.
  std::chrono::milliseconds keepalive_interval{200};
  /// HCOMM_KEEPALIVE_TIMEOUT_MS: a link with no sign of life (any frame) for this long is dead;
  /// must exceed keepalive_interval.
  std::chrono::milliseconds keepalive_timeout{800};
  /// HCOMM_PHI_THRESHOLD: > 0 also suspects a link once its phi-accrual level (from the
  /// observed arrival intervals) passes this value, e.g. 8; 0 = the timeout alone.
  double phi_threshold = 0;
  /// HCOMM_PEER_TIMEOUT_MS: a peer whose every link stays down this long is lost
  /// (HCOMM_ERR_PEER_LOST for everything involving it); at least keepalive_timeout.
  std::chrono::milliseconds peer_timeout{5000};
  /// HCOMM_RECONNECT_MIN_MS / HCOMM_RECONNECT_MAX_MS: backoff between reconnection attempts
  /// (doubling, with jitter); max at least min.
  std::chrono::milliseconds reconnect_min{100};
  std::chrono::milliseconds reconnect_max{2000};
  /// HCOMM_FAILBACK_MS: a primary that traffic left must pass the data-path probe (every round)
  /// this long before traffic moves back to it (and, under multi-path, a fallback made again
  /// before it carries large frames again).
  std::chrono::milliseconds failback_after{600};
  /// HCOMM_GRAY_WINDOW_MS: the window over which a link's goodput and loss are judged.
  std::chrono::milliseconds gray_window{300};
  /// HCOMM_GRAY_GOODPUT_PCT: a link that carries traffic is sick once, over a window in which
  /// frames waited on it the whole time, it delivered less than this percentage of its healthy
  /// goodput (and less than the other link's); 0: off.
  int gray_goodput_pct = 25;
  /// HCOMM_GRAY_LOSS_PCT: ... or once its medium resent this percentage of the packets it sent
  /// over the window (TCP retransmissions, RDMA retries; at least 200 packets); 0: off.
  int gray_loss_pct = 10;
  /// HCOMM_GRAY_RTT_MS: ... or once 5 round trips in a row, measured while nothing of this
  /// rank's waited on it, took longer than this (and 10x its smallest); 0: off.
  std::chrono::milliseconds gray_rtt{100};
  /// HCOMM_GRAY_HOLD_MS: after a gray failure of a link, traffic goes back to it no sooner than
  /// this, doubling with each further gray failure within HCOMM_FAILOVER_LIMIT's window (up to
  /// 16x).
  std::chrono::milliseconds gray_hold{1000};
  /// HCOMM_PROBE_BYTES: the bytes a data-path probe round sends each way.
  size_t probe_bytes = size_t{1} << 20;
  /// HCOMM_PROBE_INTERVAL_MS: the pause between probe rounds.
  std::chrono::milliseconds probe_interval{100};
  /// HCOMM_MULTIPATH: large frames on both links at once (see MultipathMode).
  MultipathMode multipath = MultipathMode::automatic;
  /// HCOMM_MULTIPATH_MIN_BYTES: frames at least this large are split between the links.
  size_t multipath_min_bytes = size_t{1} << 20;
  /// HCOMM_FAILOVER_LIMIT "R/T": more than R failovers within T seconds keep the peer on its
  /// fallback for good (and say so). Default "5/30".
  int failover_limit = 5;
  std::chrono::milliseconds failover_window{30000};

  // ---- QoS (hcomm/qos.hpp, README: "QoS")
  /// HCOMM_QOS "min=30,max=70,priority=2": this communicator's traffic class (any subset of the
  /// keys; the others keep QosClass's defaults).
  QosClass qos;
  /// HCOMM_LINK_GBPS: capacity of the bottleneck link the communicators of this host share, in
  /// Gbit/s (up to 100000); 0: the speed the listening interface reports (10 when it reports
  /// none).
  double link_gbps = 0;
  /// HCOMM_FALLBACK_LINK_GBPS: the same for traffic moved to its fallback link; 0: link_gbps.
  double fallback_link_gbps = 0;

  // ---- runtime
  int actor_threads = 2;  ///< HCOMM_ACTOR_THREADS: CAF scheduler threads, 1..64 (control plane)
  /// HCOMM_SPIN_US: how long a thread waiting for an operation drives progress itself (busy
  /// polling) before it sleeps. -1: 500 us when this host has a core per local rank, else 0.
  int spin_us = -1;

  /// Defaults overridden by the environment. Fails with HCOMM_ERR_INVALID_ARG naming the variable,
  /// its value and what it accepts when a variable is set to something that does not parse, and
  /// naming both when two disagree (keep-alive timeout not above its interval, ...).
  static Expected<Config> from_env();
};

}  // namespace hcomm
