// The per-process runtime: the CAF actor system (control plane), the progress engine (data plane)
// and, on the rank that hosts it, the rendezvous store. Shared by the communicators of a process;
// created with the first and destroyed with the last.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hcomm/config.hpp"
#include "hcomm/status.hpp"

namespace caf {
class actor;
class actor_system;
}  // namespace caf

namespace hcomm::bootstrap {
class StoreServer;
}

namespace hcomm::transport {
class ProgressEngine;
}

namespace hcomm::qos {
class SendGate;
}

namespace hcomm::actors {

class Runtime {
 public:
  static std::shared_ptr<Runtime> acquire(const Config& cfg);
  /// The process' runtime if a communicator exists, else null.
  static std::shared_ptr<Runtime> current();
  ~Runtime();

  caf::actor_system& system() { return *system_; }
  transport::ProgressEngine& engine() { return *engine_; }
  /// The QoS send path of the process (engine thread only).
  qos::SendGate& send_gate() { return *gate_; }
  /// Starts the rendezvous store on host:port unless this process already hosts it (or an
  /// extra store on that port).
  Status host_store(const std::string& host, uint16_t port);
  /// Waits (until `deadline`) while the store this process hosts on `port` has more than
  /// `keep` clients connected: a root whose creation failed on a launching mistake keeps the
  /// mistake readable until the other processes have read it and gone. Returns at once when it
  /// hosts no store on `port`.
  void linger_store(uint16_t port, size_t keep, std::chrono::steady_clock::time_point deadline);
  /// Starts another rendezvous store on host and an ephemeral port (Communicator::shrink(),
  /// whose survivors may have lost rank 0's); returns the port. It lives as long as the runtime.
  Expected<uint16_t> host_extra_store(const std::string& host);
  /// Communicators meeting at rendezvous `root` ("host:port") are numbered in creation order
  /// there, the same on every rank that meets there (a sub-group with a rendezvous of its own
  /// starts at 0, whatever else its ranks created). Any thread.
  uint64_t next_generation(const std::string& root) {
    std::lock_guard<std::mutex> lock(store_mutex_);
    return generations_[root]++;
  }
  /// Actors of the whole process by name (the mr_cache actor of each RDMA device): they live as
  /// long as the runtime and are stopped before its actor system.
  /// Spawns the actor `name` with `spawn` unless it exists.
  void ensure_process_actor(const std::string& name, const std::function<caf::actor()>& spawn);
  /// The actors whose names start with `prefix`.
  std::vector<caf::actor> process_actors(const std::string& prefix);

 private:
  explicit Runtime(const Config& cfg);
  struct SystemHolder;
  std::unique_ptr<SystemHolder> holder_;
  caf::actor_system* system_ = nullptr;
  std::unique_ptr<transport::ProgressEngine> engine_;
  std::unique_ptr<qos::SendGate> gate_;  // destroyed after the engine (its tasks use it)
  std::unique_ptr<bootstrap::StoreServer> store_;
  std::vector<std::unique_ptr<bootstrap::StoreServer>> extra_stores_;
  std::mutex store_mutex_;
  std::map<std::string, uint64_t> generations_;  // under store_mutex_
  std::mutex actors_mutex_;
  std::map<std::string, std::unique_ptr<caf::actor>> process_actors_;
};

}  // namespace hcomm::actors
