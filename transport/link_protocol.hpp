// How hcomm makes links to peers: the interface every protocol a communicator opens has inside
// hcomm. Its own (tcp, shm, rdma) implement it directly, so their links move bytes zero-copy and
// match frames where they land; an application's hcomm::Protocol (hcomm/protocol.hpp) is wrapped
// in a ConnectionProtocol (transport/connection_protocol.hpp), whose links carry frames over the
// application's message Connections. The registry (protocol_registry.hpp) hands out both alike.
//
// Lifecycle per communicator: attach() → open() on every rank (its address is published) →
// reaches() per peer → prepare() with the peers it carries → create_link() per peer on the
// engine thread → shutdown() when the data plane closes. Under failover, offer()/redial() make
// links again after the first one failed.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hcomm/config.hpp"
#include "hcomm/protocol.hpp"
#include "transport/link.hpp"
#include "transport/progress_engine.hpp"
#include "transport/rendezvous.hpp"

namespace hcomm::transport {

/// What a built-in protocol's links are made with (one communicator, one peer).
struct LinkContext {
  ProgressEngine* engine = nullptr;
  LinkObserver* observer = nullptr;
  uint32_t comm_id = 0;
  uint64_t comm_uid = 0;
  int my_rank = -1;
  int world_size = 0;
  int peer = -1;
  std::string peer_address;  ///< what the peer's open() published
  /// Counts the payload bytes of data frames sent to the peer (not owned; may be null).
  std::atomic<uint64_t>* bytes_sent = nullptr;
  /// Which making of the link to this peer (0 at creation; failover's reconnection attempts
  /// number theirs alike on both ranks): a medium that accepts connections takes only this
  /// attempt's.
  uint32_t generation = 0;
};

/// A peer a protocol carries, as prepare() is told.
struct PeerAddress {
  int rank = -1;
  std::string address;  ///< what the peer's open() published
};

class LinkProtocol {
 public:
  using UpCallback = std::function<void(const Status&)>;

  virtual ~LinkProtocol() = default;

  /// What the protocol can do (queried, not discovered by failure).
  virtual ProtocolCaps caps() const = 0;
  /// Before open(): the engine the links will live on, the communicator's configuration and
  /// the IP TOS byte (DSCP << 2) its traffic class marks packets with.
  virtual void attach(ProgressEngine& engine, const Config& config, int traffic_class) {
    engine_ = &engine;
    config_ = config;
    traffic_class_ = traffic_class;
  }
  /// Creating thread: prepares this rank (opens a device, binds a listener) and returns the
  /// address every other rank receives. HCOMM_ERR_NO_DEVICE: not usable on this rank.
  virtual Expected<std::string> open(const ProtocolContext& context) = 0;
  /// Whether this rank can reach `peer`, which published `address` and runs on `peer_host_id`.
  virtual bool reaches(int peer, const std::string& peer_host_id,
                       const std::string& address) const = 0;
  /// Creating thread, after every rank published its address and the peers this protocol
  /// carries are chosen (`peers`, by ascending rank): whatever must be exchanged or connected
  /// beyond the address (queue pair numbers, an application's connections) happens here, by
  /// `deadline`. When it returns OK on every rank, create_link() may send at once.
  virtual Status prepare(const std::vector<PeerAddress>& peers, Rendezvous& rendezvous,
                         Rendezvous::Deadline deadline) {
    (void)peers;
    (void)rendezvous;
    (void)deadline;
    return {};
  }
  /// Engine thread: a link to context.peer that starts establishing itself at once; `on_up`
  /// runs once with the outcome, by `deadline`. Null only after on_up reported why.
  virtual std::unique_ptr<Link> create_link(const LinkContext& context,
                                            ProgressEngine::Clock::time_point deadline,
                                            UpCallback on_up) = 0;
  /// Engine thread: the data plane is closing; drop what open() set up (listeners, ...).
  virtual void shutdown() {}

  // ---- reconnection (failover/): a new link to a peer after its first one failed. Both ranks
  // call redial(); a protocol whose links need more than the address (RDMA's queue pair numbers)
  // first makes its half with offer() and the two offers are exchanged over another link.

  /// Whether links can be made again after creation.
  virtual bool can_redial() const { return true; }
  /// Whether redial() needs the peer's offer().
  virtual bool needs_offer() const { return false; }
  /// Engine thread: makes this rank's half of a new link to context.peer (replacing an earlier
  /// one not yet used) and returns what the peer's redial() needs.
  virtual Expected<std::string> offer(const LinkContext& context) {
    (void)context;
    return std::string();
  }
  /// Engine thread: a new link to context.peer, like create_link(); `peer_offer` is what the
  /// peer's offer() returned ("" when needs_offer() is false).
  virtual std::unique_ptr<Link> redial(const LinkContext& context, const std::string& peer_offer,
                                       ProgressEngine::Clock::time_point deadline,
                                       UpCallback on_up) {
    (void)peer_offer;
    return create_link(context, deadline, std::move(on_up));
  }

 protected:
  ProgressEngine* engine_ = nullptr;
  Config config_;
  int traffic_class_ = 0;
};

}  // namespace hcomm::transport
