#include "actors/runtime.hpp"

#include <chrono>
#include <thread>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include "bootstrap/store_server.hpp"
#include "core/log.hpp"
#include "qos/send_gate.hpp"
#include "transport/progress_engine.hpp"

namespace hcomm::actors {

struct Runtime::SystemHolder {
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
};

namespace {
std::mutex current_mutex;
std::weak_ptr<Runtime> current_runtime;
}  // namespace

std::shared_ptr<Runtime> Runtime::acquire(const Config& cfg) {
  std::lock_guard<std::mutex> lock(current_mutex);
  if (auto rt = current_runtime.lock()) return rt;
  std::shared_ptr<Runtime> rt(new Runtime(cfg));
  current_runtime = rt;
  return rt;
}

std::shared_ptr<Runtime> Runtime::current() {
  std::lock_guard<std::mutex> lock(current_mutex);
  return current_runtime.lock();
}

void Runtime::ensure_process_actor(const std::string& name,
                                   const std::function<caf::actor()>& spawn) {
  std::lock_guard<std::mutex> lock(actors_mutex_);
  auto& slot = process_actors_[name];
  if (!slot) slot = std::make_unique<caf::actor>(spawn());
}

std::vector<caf::actor> Runtime::process_actors(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(actors_mutex_);
  std::vector<caf::actor> out;
  for (auto& [name, actor] : process_actors_)
    if (name.compare(0, prefix.size(), prefix) == 0) out.push_back(*actor);
  return out;
}

Runtime::Runtime(const Config& cfg) : holder_(std::make_unique<SystemHolder>()) {
  // The control plane is light: a couple of threads, and the default (one per core, at least 4)
  // would compete with the progress engine and the application on small machines.
  holder_->config.set("scheduler.max-threads", static_cast<size_t>(cfg.actor_threads));
  // Work sharing: idle workers block on a condition variable. Work stealing's idle workers wake
  // up periodically to poll, and each wake-up preempts a thread busy polling for a peer's bytes.
  holder_->config.set("scheduler.policy", caf::atom("sharing"));
  holder_->config.set("logger.verbosity", caf::atom("quiet"));
  holder_->system = std::make_unique<caf::actor_system>(holder_->config);
  system_ = holder_->system.get();
  engine_ = std::make_unique<transport::ProgressEngine>();
  gate_ = std::make_unique<qos::SendGate>(*engine_);
  HCOMM_LOG(debug, core::log::kActor, "runtime up: %d actor thread(s), one progress engine",
            cfg.actor_threads);
}

Runtime::~Runtime() {
  store_.reset();
  extra_stores_.clear();
  {
    std::lock_guard<std::mutex> lock(actors_mutex_);
    for (auto& [name, actor] : process_actors_)
      caf::anon_send_exit(*actor, caf::exit_reason::user_shutdown);
    process_actors_.clear();
  }
  // Actors first (they may post to the engine), then the engine.
  holder_->system.reset();
  engine_.reset();  // runs the tasks still queued, some of which pace the gate
  gate_.reset();
}

Expected<uint16_t> Runtime::host_extra_store(const std::string& host) {
  std::lock_guard<std::mutex> lock(store_mutex_);
  auto options = bootstrap::StoreServerOptions::from_environment();
  if (!options.ok()) return options.status();
  auto server = bootstrap::StoreServer::start(host, 0, std::move(options.value()));
  if (!server.ok()) return server.status();
  const uint16_t port = server.value()->port();
  extra_stores_.push_back(std::move(server.value()));
  HCOMM_LOG(info, core::log::kBoot, "rendezvous store listening on %s:%u", host.c_str(),
            static_cast<unsigned>(port));
  return port;
}

void Runtime::linger_store(uint16_t port, size_t keep,
                           std::chrono::steady_clock::time_point deadline) {
  const bootstrap::StoreServer* server = nullptr;
  {
    std::lock_guard<std::mutex> lock(store_mutex_);
    if (store_ && store_->port() == port) server = store_.get();
  }
  // The store lives as long as this runtime, which the caller holds.
  while (server != nullptr && server->clients() > keep &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

Status Runtime::host_store(const std::string& host, uint16_t port) {
  std::lock_guard<std::mutex> lock(store_mutex_);
  if (store_ && store_->port() == port) return {};
  // A shrunk communicator's root started its store already (host_extra_store()).
  for (const auto& s : extra_stores_)
    if (s->port() == port) return {};
  auto options = bootstrap::StoreServerOptions::from_environment();
  if (!options.ok()) return options.status();
  auto server = bootstrap::StoreServer::start(host, port, std::move(options.value()));
  if (!server.ok()) return server.status();
  // A communicator meeting at another address than the first one's (a sub-group's own
  // rendezvous) gets a store of its own, which lives as long as the runtime.
  if (store_)
    extra_stores_.push_back(std::move(server.value()));
  else
    store_ = std::move(server.value());
  HCOMM_LOG(info, core::log::kBoot, "rendezvous store listening on %s:%u", host.c_str(),
            static_cast<unsigned>(port));
  return {};
}

}  // namespace hcomm::actors
