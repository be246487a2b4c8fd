// hcomm public API: transports as plugins.
//
// Every transport hcomm uses — its own tcp, shm and rdma, and any an application adds — is a
// Protocol registered by name in one registry. When a communicator is created, each registered
// protocol is opened on every rank and publishes an address at the rendezvous; then, per peer,
// the first protocol (highest preference) that is open on both ranks and reaches that peer
// carries the traffic, unless HCOMM_TRANSPORT names one protocol for every peer.
//
// An application protocol moves whole messages (Connection); hcomm puts its frames (header and
// payload) into them and does matching, reductions and error handling itself. Built-in protocols
// are registered and chosen the same way, but drive hcomm's internal link interface directly for
// zero-copy paths.
//
//   class MyProtocol : public hcomm::Protocol { ... };
//   HCOMM_REGISTER_PROTOCOL("my_proto", MyProtocol);
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hcomm/status.hpp"

namespace hcomm {

/// What a protocol can do: queried, not discovered by failure.
struct ProtocolCaps {
  /// Largest message one Connection::send() carries; hcomm splits larger payloads (>= 4096).
  size_t max_message_bytes = 0;
  /// Supports remote writes without a receive posted by the peer (RDMA).
  bool one_sided = false;
  /// Reports a dead peer by itself (a reset, EOF, completion error) rather than by silence.
  bool detects_peer_failure = false;
  /// Only reaches ranks on this host (same host identity).
  bool same_host_only = false;
  /// Its traffic crosses the host's network link, so the QoS classes' rates pace it.
  bool paced = true;
  /// Its medium fails only when a process does (shared memory): a reliable channel with a
  /// fallback link is of no use over it unless HCOMM_FAILOVER=on asks for one.
  bool fails_only_with_process = false;
};

/// What a protocol is told when a communicator opens it.
struct ProtocolContext {
  int rank = 0;
  int world_size = 1;
  uint64_t comm_uid = 0;     ///< unique per communicator: name things after it
  std::string host_id;       ///< this rank's host identity (ranks with equal ids share a host)
  std::string interface_ip;  ///< the IPv4 address hcomm listens on (HCOMM_SOCKET_IFNAME)
};

/// Two gathered pieces of one message (a frame's header and its payload).
struct ConstBuffer {
  const void* data = nullptr;
  size_t size = 0;
};

/// One peer, as an application protocol sees it: reliable, ordered messages. hcomm calls it
/// from one thread (its progress engine), never concurrently.
class HCOMM_API Connection {
 public:
  virtual ~Connection() = default;
  /// Sends one message made of `parts` in order, as a whole. Must not block for long: copy or
  /// queue. The parts may be reused as soon as it returns. An error fails the link.
  virtual Status send(const ConstBuffer* parts, size_t count) = 0;
  /// The next whole message, std::nullopt when none is ready. Never blocks. An error (or
  /// HCOMM_ERR_PEER_LOST when the peer closed) fails the link.
  virtual Expected<std::optional<std::vector<std::byte>>> receive() = 0;
  /// A file descriptor that becomes readable when receive() may return a message: each time it
  /// is, hcomm calls receive() until it returns std::nullopt (so an edge need not be re-armed
  /// for messages already buffered). -1 makes hcomm call receive() on every round of its
  /// progress engine.
  virtual int event_fd() const { return -1; }
};

class HCOMM_API Protocol {
 public:
  virtual ~Protocol() = default;
  virtual ProtocolCaps caps() const = 0;
  /// Prepares this rank for one communicator (opens a device, binds a listener) and returns its
  /// address, which every other rank receives. HCOMM_ERR_NO_DEVICE: not usable on this rank
  /// (hcomm then uses another protocol, unless HCOMM_TRANSPORT forces this one).
  virtual Expected<std::string> open(const ProtocolContext& context) = 0;
  /// Whether this rank can reach `peer`, which published `address` and runs on `peer_host_id`.
  virtual bool reaches(int peer, const std::string& peer_host_id,
                       const std::string& address) const = 0;
  /// Connects to `peer` (which opened this protocol and published `address`) by `deadline`.
  /// Called on every rank for every peer it reaches through this protocol, in rank order;
  /// implementations pair up the two sides themselves (e.g. the lower rank listens).
  virtual Expected<std::unique_ptr<Connection>> connect(
      int peer, const std::string& address, std::chrono::steady_clock::time_point deadline) = 0;
};

using ProtocolFactory = std::function<std::unique_ptr<Protocol>()>;

/// Adds a protocol to the registry (a new Protocol is made per communicator). `preference`
/// orders automatic choice: higher first; hcomm's own are shm 300, rdma 200, tcp 100.
/// Returns false (and changes nothing) when `name` is taken.
HCOMM_API bool register_protocol(const std::string& name, ProtocolFactory factory,
                                 int preference = 150);

/// Registered protocol names, most preferred first.
HCOMM_API std::vector<std::string> registered_protocols();

/// The capabilities of a registered protocol; HCOMM_ERR_INVALID_ARG for an unknown name.
HCOMM_API Expected<ProtocolCaps> protocol_caps(const std::string& name);

}  // namespace hcomm

/// Registers `Class` (default-constructible, derived from hcomm::Protocol; a qualified name is
/// fine) as `name` when the program starts.
#define HCOMM_REGISTER_PROTOCOL(name, Class) \
  HCOMM_REGISTER_PROTOCOL_AS(name, Class, HCOMM_PROTOCOL_CONCAT(hcomm_protocol_, __COUNTER__))
#define HCOMM_PROTOCOL_CONCAT(a, b) HCOMM_PROTOCOL_CONCAT2(a, b)
#define HCOMM_PROTOCOL_CONCAT2(a, b) a##b
#define HCOMM_REGISTER_PROTOCOL_AS(name, Class, variable)                   \
  static const bool variable [[maybe_unused]] = ::hcomm::register_protocol( \
      name, [] { return std::unique_ptr<::hcomm::Protocol>(new Class()); })
