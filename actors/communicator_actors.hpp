// The actors of one communicator, behind a CAF-free handle: the communicator actor, one
// connection-manager actor per peer (each establishes its peer's link on the engine and hears of
// its failure), and, when some peer has a reliable channel, the link supervisor actor (a
// failover::LinkSupervisor per such peer: reconnections, fail-backs, peer loss).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/completion.hpp"
#include "dataplane/data_plane.hpp"
#include "failover/link_supervisor.hpp"

namespace hcomm::actors {

class Runtime;

class CommunicatorActors {
 public:
  /// Spawns the actors; the connection managers start connecting at once. `ready` completes
  /// when every peer's link is up (OK) or one could not be made (why). The actors hold `plane`
  /// weakly: its owner destroys it on the engine thread. `endpoints`, by rank, name the peers
  /// in log lines; `supervised` are the peers with a reliable channel.
  static std::unique_ptr<CommunicatorActors> spawn(
      std::shared_ptr<Runtime> runtime, const std::shared_ptr<dataplane::DataPlane>& plane,
      int rank, std::vector<std::string> endpoints,
      std::map<int, failover::LinkSupervisor::Params> supervised,
      std::chrono::steady_clock::time_point deadline, std::shared_ptr<core::Completion> ready);
  /// Stops the actors (they no longer touch the data plane).
  ~CommunicatorActors();

 private:
  struct Handles;
  explicit CommunicatorActors(std::unique_ptr<Handles> handles);
  std::unique_ptr<Handles> handles_;
};

}  // namespace hcomm::actors
