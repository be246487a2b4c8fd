// The communicator actor, the connection-manager actors, and the creation sequence that starts
// them. The one translation unit (with runtime.cpp) that includes CAF's heavy headers.
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <future>
#include <map>
#include <optional>
#include <random>

#include "actors/bootstrap/interface_address.hpp"
#include "actors/bootstrap/launch_env.hpp"
#include "actors/bootstrap/store_client.hpp"
#include "actors/communicator_control.hpp"
#include "actors/data_plane.hpp"
#include "actors/messages.hpp"
#include "actors/runtime.hpp"
#include "log/log.hpp"
#include "topology/host_identity.hpp"
#include "transport/shm/link_segment.hpp"
#include "transport/shm/slot_board.hpp"

namespace hcomm::actors {

// ---------------------------------------------------------------------------------------------
// communicator actor

struct CommunicatorState {
  std::shared_ptr<Runtime> runtime;
  std::shared_ptr<DataPlane> plane;
  int rank = 0;
  int size = 1;
  std::shared_ptr<detail::Completion> ready;  // completed when every peer is up (or one failed)
  int peers_up = 0;
  std::vector<connection_manager_actor> managers;
};

struct ManagerState {
  std::shared_ptr<Runtime> runtime;
  std::shared_ptr<DataPlane> plane;
  int peer = -1;
  std::string endpoint;
  transport::ProgressEngine::Clock::time_point deadline;
  communicator_actor parent;
};

namespace {

connection_manager_actor::behavior_type connection_manager(
    connection_manager_actor::stateful_pointer<ManagerState> self, ManagerState init) {
  self->state = std::move(init);
  return {
      [=](connect_atom) {
        auto& st = self->state;
        auto me = connection_manager_actor{self};
        auto plane = st.plane;
        int peer = st.peer;
        std::string endpoint = st.endpoint;
        auto deadline = st.deadline;
        st.runtime->engine().post([plane, peer, endpoint, deadline, me] {
          plane->connect_peer(
              peer, endpoint, deadline,
              [me, peer](const Status& s) {
                if (s.ok())
                  caf::anon_send(me, link_up_atom::value,
                                 std::string("rank ") + std::to_string(peer));
                else
                  caf::anon_send(me, link_fail_atom::value, s.message());
              },
              [me](const Status& s) { caf::anon_send(me, link_down_atom::value, s.message()); });
        });
      },
      [=](link_up_atom, const std::string&) {
        self->send(self->state.parent, peer_up_atom::value, static_cast<int32_t>(self->state.peer));
      },
      [=](link_fail_atom, const std::string& why) {
        HCOMM_LOG(warn, log::kNet, "cannot reach rank %d (%s): %s", self->state.peer,
                  self->state.endpoint.c_str(), why.c_str());
        self->send(self->state.parent, peer_fail_atom::value,
                   static_cast<int32_t>(self->state.peer), why);
      },
      [=](link_down_atom, const std::string& why) {
        HCOMM_LOG(warn, log::kNet, "link to rank %d (%s) failed: %s", self->state.peer,
                  self->state.endpoint.c_str(), why.c_str());
        self->send(self->state.parent, link_down_atom::value,
                   static_cast<int32_t>(self->state.peer), why);
      },
  };
}

communicator_actor::behavior_type communicator(
    communicator_actor::stateful_pointer<CommunicatorState> self, CommunicatorState init,
    std::vector<std::string> endpoints, transport::ProgressEngine::Clock::time_point deadline) {
  self->state = std::move(init);
  auto& st = self->state;
  for (int peer = 0; peer < st.size; ++peer) {
    if (peer == st.rank) continue;
    ManagerState m;
    m.runtime = st.runtime;
    m.plane = st.plane;
    m.peer = peer;
    m.endpoint = endpoints[static_cast<size_t>(peer)];
    m.deadline = deadline;
    m.parent = communicator_actor{self};
    auto manager = self->spawn<caf::linked>(connection_manager, std::move(m));
    self->send(manager, connect_atom::value);
    st.managers.push_back(manager);
  }
  if (st.size == 1) st.ready->complete({});
  return {
      [=](peer_up_atom, int32_t) {
        auto& s = self->state;
        if (++s.peers_up == s.size - 1) s.ready->complete({});
      },
      [=](peer_fail_atom, int32_t peer, const std::string& why) {
        self->state.ready->complete(
            {HCOMM_ERR_TIMEOUT, "rank " + std::to_string(peer) + " unreachable: " + why});
      },
      [=](link_down_atom, int32_t, const std::string&) {
        // Operations on the link were failed by the engine; failover (a later release) hooks
        // in here.
      },
  };
}

uint64_t random_uid() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// creation

struct CommunicatorControl::State {
  std::shared_ptr<Runtime> runtime;
  std::shared_ptr<DataPlane> plane;
  communicator_actor actor;
  int local_ranks = 0;
  std::vector<RankPlace> places;
  std::vector<std::string> transports;
  std::optional<transport::shm::SlotBoard> slot_board;
};

Expected<std::unique_ptr<CommunicatorControl>> CommunicatorControl::establish(const Config& cfg) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + cfg.connect_timeout;
  auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  };

  auto root = boot::parse_host_port(cfg.root_addr);
  if (!root.ok()) return root.status();
  auto local = boot::pick_local_address(cfg.socket_ifname, root->host);
  if (!local.ok()) return local.status();

  auto runtime = Runtime::acquire(cfg);
  if (cfg.rank == 0) {
    Status st = runtime->host_store(root->host, root->port);
    if (!st.ok()) return st;
  }
  auto store = boot::StoreClient::connect(root->host, root->port, left());
  if (!store.ok()) return store.status();
  auto& client = *store.value();

  const std::string prefix = "comm/" + std::to_string(runtime->next_generation()) + "/";
  uint64_t uid = 0;
  if (cfg.rank == 0) {
    uid = random_uid();
    Status st = client.set(prefix + "uid", std::to_string(uid));
    if (!st.ok()) return st;
  } else {
    auto v = client.get(prefix + "uid", left());
    if (!v.ok())
      return Status{v.status().code(),
                    "waiting for rank 0 at " + cfg.root_addr + ": " + v.status().message()};
    uid = std::stoull(v.value());
  }

  auto listener =
      transport::tcp::TcpListener::bind(runtime->engine(), local.value(), uid, cfg.world_size);
  if (!listener.ok()) return listener.status();
  // The host key goes first: a rank whose address is published has published its host too.
  const topo::HostIdentity host = topo::this_host();
  Status st = client.set(prefix + "host/" + std::to_string(cfg.rank), host.id + "\n" + host.name);
  if (!st.ok()) return st;
  st = client.set(prefix + "addr/" + std::to_string(cfg.rank), listener.value()->endpoint());
  if (!st.ok()) return st;
  std::vector<std::string> keys;
  for (int r = 0; r < cfg.world_size; ++r) keys.push_back(prefix + "addr/" + std::to_string(r));
  std::vector<std::string> missing;
  st = client.wait(keys, left(), &missing);
  if (!st.ok()) {
    if (st.code() != HCOMM_ERR_TIMEOUT) return st;
    std::string ranks;
    for (auto& k : missing) ranks += (ranks.empty() ? "" : ", ") + k.substr(k.rfind('/') + 1);
    return Status{HCOMM_ERR_TIMEOUT,
                  "rank(s) " + ranks + " of " + std::to_string(cfg.world_size) +
                      " never arrived at the rendezvous " + cfg.root_addr + " within " +
                      std::to_string(cfg.connect_timeout.count()) +
                      " ms: start every rank (HCOMM_WORLD_SIZE=" + std::to_string(cfg.world_size) +
                      ") or raise HCOMM_CONNECT_TIMEOUT_MS"};
  }
  std::vector<std::string> endpoints(static_cast<size_t>(cfg.world_size));
  for (int r = 0; r < cfg.world_size; ++r) {
    auto v = client.get(keys[static_cast<size_t>(r)], left());
    if (!v.ok()) return v.status();
    endpoints[static_cast<size_t>(r)] = v.value();
  }
  std::vector<RankPlace> places(static_cast<size_t>(cfg.world_size));
  for (int r = 0; r < cfg.world_size; ++r) {
    auto v = client.get(prefix + "host/" + std::to_string(r), left());
    if (!v.ok()) return v.status();
    auto& p = places[static_cast<size_t>(r)];
    const size_t nl = v.value().find('\n');
    p.host_id = v.value().substr(0, nl);
    p.host_name = nl == std::string::npos ? p.host_id : v.value().substr(nl + 1);
    p.endpoint = endpoints[static_cast<size_t>(r)];
  }
  HCOMM_LOG(info, log::kInit, "rank %d of %d listening on %s, rendezvous %s", cfg.rank,
            cfg.world_size, endpoints[static_cast<size_t>(cfg.rank)].c_str(),
            cfg.root_addr.c_str());

  // Shared memory to the peers on this host, unless HCOMM_TRANSPORT=tcp.
  std::vector<std::string> transports(static_cast<size_t>(cfg.world_size), "tcp");
  std::vector<bool> shm_peers(static_cast<size_t>(cfg.world_size), false);
  bool any_shm = false;
  for (int r = 0; r < cfg.world_size; ++r) {
    const bool same_host = places[static_cast<size_t>(r)].host_id == host.id;
    if (r == cfg.rank) {
      transports[static_cast<size_t>(r)] = "self";
    } else if (same_host && cfg.transport != "tcp") {
      transports[static_cast<size_t>(r)] = "shm";
      shm_peers[static_cast<size_t>(r)] = true;
      any_shm = true;
    } else if (cfg.transport == "shm") {
      return Status{HCOMM_ERR_INVALID_ARG, "HCOMM_TRANSPORT=shm, but rank " + std::to_string(r) +
                                               " runs on host " +
                                               places[static_cast<size_t>(r)].host_name + " (" +
                                               places[static_cast<size_t>(r)].host_id +
                                               "), not on this one (" + host.name +
                                               "): use HCOMM_TRANSPORT=auto to reach other "
                                               "hosts over TCP"};
    }
  }
  // Segments of crashed runs go before this one adds its own (see transport/shm/link_segment).
  if (any_shm) transport::shm::reap_dead_segments();
  // Every rank on this host: small collectives run on a slot board, without links.
  std::optional<transport::shm::SlotBoard> board;
  int ranks_here = 0;
  for (const auto& p : places) ranks_here += p.host_id == host.id;
  if (cfg.transport != "tcp" && cfg.world_size > 1 && ranks_here == cfg.world_size &&
      cfg.world_size <= transport::shm::SlotBoard::kMaxRanks) {
    auto b = transport::shm::SlotBoard::establish(uid, cfg.rank, cfg.world_size, deadline);
    if (!b.ok()) return b.status();
    board = std::move(b.value());
  }

  DataPlaneParams params;
  params.shm_peers = shm_peers;
  params.comm_uid = uid;
  params.comm_id = static_cast<uint32_t>(uid ^ (uid >> 32));
  params.rank = cfg.rank;
  params.size = cfg.world_size;
  params.streams_per_peer = cfg.sockets_per_peer;
  params.socket_options = {cfg.send_buf_size, cfg.recv_buf_size, cfg.tcp_congestion};
  auto plane = std::make_shared<DataPlane>(runtime->engine(), std::move(listener.value()), params);

  CommunicatorState cs;
  cs.runtime = runtime;
  cs.plane = plane;
  cs.rank = cfg.rank;
  cs.size = cfg.world_size;
  cs.ready = std::make_shared<detail::Completion>();
  auto ready = cs.ready;
  auto actor = runtime->system().spawn(communicator, std::move(cs), endpoints, deadline);

  auto state = std::make_unique<State>();
  state->runtime = runtime;
  state->plane = plane;
  state->actor = actor;
  state->local_ranks = ranks_here;
  state->places = std::move(places);
  state->transports = std::move(transports);
  state->slot_board = std::move(board);
  std::unique_ptr<CommunicatorControl> control(new CommunicatorControl(std::move(state)));
  // A little past the deadline: the links report their own timeouts with better messages.
  if (!ready->wait_until(deadline + std::chrono::seconds(2)))
    return Status{HCOMM_ERR_TIMEOUT, "connecting to the peers did not finish within " +
                                         std::to_string(cfg.connect_timeout.count()) + " ms"};
  if (!ready->status().ok()) return ready->status();
  HCOMM_LOG(info, log::kInit, "communicator ready: rank %d of %d, %d stream(s) per peer", cfg.rank,
            cfg.world_size, cfg.sockets_per_peer);
  return control;
}

CommunicatorControl::CommunicatorControl(std::unique_ptr<State> state) : state_(std::move(state)) {}

CommunicatorControl::~CommunicatorControl() {
  caf::anon_send_exit(state_->actor, caf::exit_reason::user_shutdown);
  auto closed = std::make_shared<std::promise<void>>();
  auto future = closed->get_future();
  auto plane = state_->plane;
  state_->runtime->engine().post([plane, closed] {
    plane->close(std::chrono::milliseconds(2000), [closed] { closed->set_value(); });
  });
  future.wait_for(std::chrono::seconds(5));
  // The data plane is destroyed on the engine thread, where its links live.
  std::promise<void> destroyed;
  auto gone = destroyed.get_future();
  state_->runtime->engine().post([plane = std::move(state_->plane), &destroyed]() mutable {
    plane.reset();
    destroyed.set_value();
  });
  gone.wait();
}

void CommunicatorControl::start(coll::OperationPtr op, coll::Schedule schedule,
                                bool caller_drives) {
  auto plane = state_->plane;
  // Engine tasks are std::function, hence copyable: the move-only schedule travels by pointer.
  auto steps = std::make_shared<coll::Schedule>(std::move(schedule));
  auto task = [plane, op = std::move(op), steps]() mutable {
    plane->start(std::move(op), std::move(*steps));
  };
  state_->runtime->engine().post(std::move(task), caller_drives);
}

bool CommunicatorControl::drive_until(const std::function<bool()>& done,
                                      std::chrono::steady_clock::time_point until) {
  return state_->runtime->engine().drive_until(done, until);
}

int CommunicatorControl::local_ranks() const {
  return state_->local_ranks;
}

const std::vector<RankPlace>& CommunicatorControl::places() const {
  return state_->places;
}

void CommunicatorControl::add_poller(transport::Poller* poller) {
  state_->runtime->engine().post(
      [&engine = state_->runtime->engine(), poller] { engine.add_poller(poller); });
}

void CommunicatorControl::remove_poller(transport::Poller* poller) {
  std::promise<void> removed;
  auto gone = removed.get_future();
  state_->runtime->engine().post([&engine = state_->runtime->engine(), poller, &removed] {
    engine.remove_poller(poller);
    removed.set_value();
  });
  gone.wait();
}

std::optional<transport::shm::SlotBoard> CommunicatorControl::take_slot_board() {
  return std::exchange(state_->slot_board, std::nullopt);
}

const std::string& CommunicatorControl::transport_to(int peer) const {
  return state_->transports[static_cast<size_t>(peer)];
}

uint64_t CommunicatorControl::bytes_sent(int peer) const {
  return state_->plane->bytes_sent(peer);
}

}  // namespace hcomm::actors
