// A protocol built into hcomm: registered and chosen like an application's (hcomm/protocol.hpp),
// but it hands the data plane Links (transport/link.hpp) instead of message Connections, so its
// bytes move zero-copy and its frames are matched where they land.
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

class LinkProtocol : public Protocol {
 public:
  using UpCallback = std::function<void(const Status&)>;

  /// Before open(): the engine the links will live on, the communicator's configuration and
  /// the IP TOS byte (DSCP << 2) its traffic class marks packets with.
  virtual void attach(ProgressEngine& engine, const Config& config, int traffic_class) {
    engine_ = &engine;
    config_ = config;
    traffic_class_ = traffic_class;
  }
  /// Creating thread, after every rank published its address and the peers this protocol
  /// carries are chosen (`peers`, ascending): whatever must be exchanged beyond the address
  /// (queue pair numbers) goes through `rendezvous` here. When it returns OK on every rank,
  /// create_link() may send at once.
  virtual Status prepare(const std::vector<int>& peers, Rendezvous& rendezvous,
                         Rendezvous::Deadline deadline) {
    (void)peers;
    (void)rendezvous;
    (void)deadline;
    return {};
  }
  /// Engine thread: a link to context.peer that starts establishing itself at once; `on_up`
  /// runs once with the outcome, by `deadline`.
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

  /// Built-ins make links, not connections.
  Expected<std::unique_ptr<Connection>> connect(int, const std::string&,
                                                std::chrono::steady_clock::time_point) override {
    return Status{HCOMM_ERR_INTERNAL, "a built-in protocol makes links, not connections"};
  }

 protected:
  ProgressEngine* engine_ = nullptr;
  Config config_;
  int traffic_class_ = 0;
};

}  // namespace hcomm::transport
