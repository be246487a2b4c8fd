// The control plane of one communicator, as the API sees it: creation (rendezvous, actors, links)
// and submission of operations. Hides CAF from the API layer.
#pragma once

#include <memory>

#include "collectives/operation.hpp"
#include "hcomm/config.hpp"
#include "hcomm/status.hpp"

namespace hcomm::actors {

class CommunicatorControl {
 public:
  /// Collective over cfg.world_size ranks; returns once every peer's link is up.
  static Expected<std::unique_ptr<CommunicatorControl>> establish(const Config& cfg);
  /// Fails running operations (HCOMM_ERR_ABORTED), says goodbye to the peers, stops the actors.
  ~CommunicatorControl();
  /// Hands `op` to the communicator actor (one mailbox hop); its Work completes from the engine.
  void submit(coll::OperationPtr op);

  struct State;

 private:
  explicit CommunicatorControl(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace hcomm::actors
