// hcomm public API: configuration.
//
// Precedence is code > environment > defaults: Config::from_env() returns the defaults overridden
// by HCOMM_* variables, and an application then sets whatever fields it wants to fix in code.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "hcomm/status.hpp"

namespace hcomm {

struct Config {
  // ---- who am I (HCOMM_RANK / RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID, and the SIZE twins)
  int rank = -1;        ///< required; -1 = not set
  int world_size = -1;  ///< required; -1 = not set
  /// "host:port" of rank 0's rendezvous store (HCOMM_ROOT_ADDR, or MASTER_ADDR + MASTER_PORT).
  /// Default "127.0.0.1:29500".
  std::string root_addr = "127.0.0.1:29500";
  /// Network interface whose IPv4 address this rank listens on and publishes
  /// (HCOMM_SOCKET_IFNAME). Empty: the root address's interface when it is local, else the first
  /// non-loopback interface that is up.
  std::string socket_ifname;

  // ---- transport
  /// HCOMM_TRANSPORT: "auto" (shared memory to ranks on this host, TCP to the others), "shm"
  /// (every rank must be on this host), "tcp" (TCP to every peer, loopback within a host).
  std::string transport = "auto";
  size_t send_buf_size = 0;       ///< HCOMM_SEND_BUF_SIZE: SO_SNDBUF in bytes, 0 = kernel default
  size_t recv_buf_size = 0;       ///< HCOMM_RECV_BUF_SIZE: SO_RCVBUF in bytes, 0 = kernel default
  int sockets_per_peer = 1;       ///< HCOMM_SOCKETS_PER_PEER: TCP connections per peer (1..16)
  /// HCOMM_TCP_CONGESTION: TCP congestion control for hcomm's sockets; "" keeps the kernel's.
  /// CUBIC by default: BBR's pacing stretches every large transfer of a collective.
  std::string tcp_congestion = "cubic";
  /// HCOMM_CHUNK_SIZE: pipelining unit of collectives; 0 = chosen per operation by the cost model.
  size_t chunk_bytes = 0;

  // ---- algorithms
  /// HCOMM_ALGO: forces algorithms, e.g. "allreduce=ring;broadcast=tree", or one name for every
  /// operation that has it ("tree"). Names: ring, tree, rd, hd, direct, auto. Empty: the cost
  /// model chooses per operation, message size and world size.
  std::string algo;
  /// HCOMM_TOPO_FILE: hosts' switches and racks (format in the README); rings follow it.
  std::string topo_file;
  /// HCOMM_CALIBRATE (1/0): measure link latency, bandwidth and reduction speed when a
  /// communicator is created (a few ms), for the cost model; 0 uses built-in loopback-TCP figures.
  bool calibrate = true;

  // ---- deadlines
  /// HCOMM_CONNECT_TIMEOUT_MS: joining the rendezvous and connecting to every peer.
  std::chrono::milliseconds connect_timeout{30000};
  /// HCOMM_TIMEOUT_MS: how long the blocking forms (Communicator::allreduce, ...) wait.
  std::chrono::milliseconds op_timeout{300000};

  // ---- runtime
  int actor_threads = 2;  ///< HCOMM_ACTOR_THREADS: CAF scheduler threads (control plane only)
  /// HCOMM_SPIN_US: how long a thread waiting for an operation drives progress itself (busy
  /// polling) before it sleeps. -1: 500 us when this host has a core per local rank, else 20 us.
  int spin_us = -1;

  /// Defaults overridden by the environment. Fails with HCOMM_ERR_INVALID_ARG naming the variable
  /// when a variable is set to something that does not parse.
  static Expected<Config> from_env();
};

}  // namespace hcomm
