// The control plane of one communicator, as the API sees it: creation (rendezvous, actors, links),
// the hand-off of planned operations to the data plane, and progress on a waiting thread. Hides
// CAF from the API layer.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives/compression_policy.hpp"
#include "collectives/operation.hpp"
#include "collectives/schedule.hpp"
#include "dataplane/peer_plan.hpp"
#include "hcomm/communicator.hpp"
#include "hcomm/config.hpp"
#include "hcomm/status.hpp"
#include "transport/progress_engine.hpp"
#include "transport/shm/slot_board.hpp"

namespace hcomm::dataplane {
class DataPlane;
}

namespace hcomm::actors {

/// Where a rank is: its host (same id = same host), its listening address, its protocols.
using RankPlace = dataplane::RankRecord;

class CommunicatorControl {
 public:
  /// Collective over cfg.world_size ranks; returns once every peer's link is up.
  static Expected<std::unique_ptr<CommunicatorControl>> establish(const Config& cfg);
  /// Fails running operations (HCOMM_ERR_ABORTED), says goodbye to the peers, stops the actors.
  ~CommunicatorControl();
  /// Hands `op` and its schedule to the progress engine (a lock-free queue, no actor); its Work
  /// completes from there. `waker`: who moves it on (transport::ProgressEngine::post).
  void start(collectives::OperationPtr op, collectives::Schedule schedule,
             transport::ProgressEngine::Waker waker);
  /// Has the engine thread look at its pollers now (transport::ProgressEngine::wake_for_work).
  void wake_engine();
  /// Runs `task` on the engine with the data plane (the API layer's engine-side work, such as
  /// matching receives from any source); not run once the plane is gone.
  void with_plane(std::function<void(dataplane::DataPlane&)> task);
  /// Runs the progress engine on the calling thread until `done()` or `until`.
  bool drive_until(const std::function<bool()>& done, std::chrono::steady_clock::time_point until);
  /// Ranks of this communicator on this host, this one included.
  int local_ranks() const;
  /// Every rank's place, by rank (from the rendezvous).
  const std::vector<RankPlace>& places() const;
  /// Has the progress engine look at `poller` on every round / stop doing so (returns once the
  /// engine no longer touches it).
  void add_poller(transport::Poller* poller);
  void remove_poller(transport::Poller* poller);
  /// The slot board of a communicator whose ranks are all on this host (once; empty otherwise).
  std::optional<transport::shm::SlotBoard> take_slot_board();
  /// The protocol this rank's link to `peer` uses ("self" for this rank): for people.
  const std::string& transport_to(int peer) const;
  /// Payload bytes this rank has sent to `peer` over its link so far.
  uint64_t bytes_sent(int peer) const;
  /// What carries traffic to `peer` now (RankInfo::transport).
  std::string carrier_to(int peer) const;
  FailoverStats failover_stats() const;
  /// Communicator::on_link_event.
  void on_link_event(std::function<void(const LinkEvent&)> callback) const;
  /// Any thread: the communicator's compression policy (see collectives/compression_policy.hpp).
  collectives::CompressionPolicy& compression() const;
  std::vector<int> lost_peers() const;
  /// Any thread: how many peers' traffic goes over their fallback link now.
  int peers_on_fallback() const;
  /// The communicator's id, alike on every rank (agreed at the rendezvous).
  uint64_t uid() const;
  /// The rendezvous store key where a launching mistake found after this communicator was made
  /// (a late second claimant of a rank) is posted (dataplane/launch_check.hpp).
  const std::string& launch_error_key() const;
  /// Any thread, never blocks: Communicator::abort(). On the engine, fails what runs here and
  /// tells the peers over the links, then runs `then` (telling the peers some other way: only
  /// after this rank's own operations failed with the abort, so that a peer's reaction, such as
  /// destroying its communicator, cannot fail them first with another status).
  void abort(const std::string& reason, std::function<void()> then = {});
  /// Any thread: Communicator::set_qos() (the first call puts the communicator on the host's
  /// QoS board and paces it).
  Status set_qos(const QosClass& qos);
  QosClass qos() const;
  /// Starts a rendezvous store on this rank's address for a shrunk communicator: "ip:port".
  Expected<std::string> host_shrink_store();

  struct State;

 private:
  explicit CommunicatorControl(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace hcomm::actors
