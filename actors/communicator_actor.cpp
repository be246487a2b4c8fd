// The communicator actor, the connection-manager actors, the link supervisor actor, and the
// creation sequence that starts them. The one translation unit (with runtime.cpp and
// mr_cache_actor.cpp) that includes CAF's heavy headers.
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <future>
#include <map>
#include <optional>
#include <random>
#include <sstream>

#include "actors/communicator_control.hpp"
#include "actors/messages.hpp"
#include "actors/mr_cache_actor.hpp"
#include "actors/qos_controller_actor.hpp"
#include "actors/runtime.hpp"
#include "bootstrap/interface_address.hpp"
#include "bootstrap/launch_env.hpp"
#include "bootstrap/store_client.hpp"
#include "core/log.hpp"
#include "dataplane/data_plane.hpp"
#include "qos/host_board.hpp"
#include "qos/link_capacity.hpp"
#include "qos/marking.hpp"
#include "qos/send_gate.hpp"
#include "topology/host_identity.hpp"
#include "transport/link_protocol.hpp"
#include "transport/protocol_registry.hpp"
#include "transport/shm/slot_board.hpp"
#include "transport/tcp/tcp_protocol.hpp"

namespace hcomm::actors {

using dataplane::DataPlane;
using dataplane::DataPlaneParams;

// ---------------------------------------------------------------------------------------------
// communicator actor

// The actors hold the data plane weakly: CommunicatorControl owns it and destroys it on the engine
// thread, where its links live; a last reference dropped by an actor would destroy it on a CAF
// worker instead.
struct CommunicatorState {
  std::shared_ptr<Runtime> runtime;
  std::weak_ptr<DataPlane> plane;
  int rank = 0;
  int size = 1;
  std::shared_ptr<core::Completion> ready;  // completed when every peer is up (or one failed)
  int peers_up = 0;
  std::vector<connection_manager_actor> managers;
};

struct ManagerState {
  std::shared_ptr<Runtime> runtime;
  std::weak_ptr<DataPlane> plane;
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
        auto deadline = st.deadline;
        st.runtime->engine().post([plane, peer, deadline, me] {
          auto live = plane.lock();
          if (!live) return;  // the communicator is gone
          live->connect_peer(
              peer, deadline,
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
        HCOMM_LOG(warn, core::log::kNet, "cannot reach rank %d (%s): %s", self->state.peer,
                  self->state.endpoint.c_str(), why.c_str());
        self->send(self->state.parent, peer_fail_atom::value,
                   static_cast<int32_t>(self->state.peer), why);
      },
      [=](link_down_atom, const std::string& why) {
        HCOMM_LOG(warn, core::log::kNet, "link to rank %d (%s) failed: %s", self->state.peer,
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

// ---------------------------------------------------------------------------------------------
// link supervisor actor

struct SupervisorState {
  std::shared_ptr<Runtime> runtime;
  std::weak_ptr<DataPlane> plane;
  std::map<int, failover::LinkSupervisor> peers;
};

/// Carries out what a peer's LinkSupervisor decided: commands go to the engine, timers come back
/// here as messages.
void carry_out(link_supervisor_actor::stateful_pointer<SupervisorState> self, int peer,
               failover::LinkSupervisor::Output out) {
  auto& st = self->state;
  const auto now = failover::LinkSupervisor::Clock::now();
  for (const auto& t : out.timers) {
    const auto delay = std::max(std::chrono::nanoseconds(0), t.when - now);
    self->delayed_send(self, delay, timer_atom::value, static_cast<int32_t>(peer), t.token);
  }
  if (out.pinned) {
    HCOMM_LOG(warn, core::log::kNet,
              "rank %d: too many failovers (HCOMM_FAILOVER_LIMIT): traffic stays on tcp-fallback "
              "and the primary is no longer reconnected",
              peer);
    LinkEvent e;
    e.peer = peer;
    e.kind = LinkEvent::Kind::pinned;
    e.to = "tcp-fallback";
    e.reason = "more failovers than HCOMM_FAILOVER_LIMIT allows";
    // On the engine thread: a reference taken here could be the plane's last one, and the
    // plane must be destroyed there.
    st.runtime->engine().post([plane = st.plane, e] {
      if (auto live = plane.lock()) live->recorder().record(e);
    });
  }
  for (auto& c : out.commands) {
    st.runtime->engine().post([plane = st.plane, peer, c] {
      if (auto live = plane.lock()) live->command(peer, c);
    });
  }
}

link_supervisor_actor::behavior_type link_supervisor(
    link_supervisor_actor::stateful_pointer<SupervisorState> self, SupervisorState init,
    std::map<int, failover::LinkSupervisor::Params> peers) {
  self->state = std::move(init);
  for (auto& [peer, params] : peers) self->state.peers.emplace(peer, params);
  return {
      [=](channel_atom, const failover::ChannelEvent& e) {
        auto it = self->state.peers.find(e.peer);
        if (it == self->state.peers.end()) return;
        carry_out(self, e.peer, it->second.on_event(e, failover::LinkSupervisor::Clock::now()));
      },
      [=](timer_atom, int32_t peer, uint64_t token) {
        auto it = self->state.peers.find(peer);
        if (it == self->state.peers.end()) return;
        carry_out(self, peer, it->second.on_timer(token, failover::LinkSupervisor::Clock::now()));
      },
  };
}

struct OpenedProtocol {
  std::string name;
  std::unique_ptr<Protocol> protocol;
  std::string address;
};

/// Opens the registered protocols, most preferred first; HCOMM_TRANSPORT=<name> opens only that
/// one. Under "auto" a protocol that cannot open here is skipped (except TCP, which everything
/// falls back to); why RDMA could not is kept for one log line.
Expected<std::vector<OpenedProtocol>> open_protocols(const Config& cfg,
                                                     transport::ProgressEngine& engine,
                                                     const ProtocolContext& context,
                                                     std::string* rdma_unavailable) {
  std::vector<OpenedProtocol> out;
  std::vector<std::string> names;
  for (const auto& entry : transport::registered()) {
    names.push_back(entry.name);
    const bool forced = entry.name == cfg.transport;
    if (!cfg.auto_transport() && !forced) continue;
    OpenedProtocol p{entry.name, entry.factory(), ""};
    if (!p.protocol)
      return Status{HCOMM_ERR_INTERNAL, "protocol " + entry.name + "'s factory made nothing"};
    if (auto* lp = dynamic_cast<transport::LinkProtocol*>(p.protocol.get()))
      lp->attach(engine, cfg, qos::tos_of(cfg.qos));
    auto address = p.protocol->open(context);
    if (!address.ok()) {
      if (forced || entry.name == "tcp")
        return Status{address.status().code(), "HCOMM_TRANSPORT=" + cfg.transport + ": " +
                                                   entry.name + ": " + address.status().message()};
      if (entry.name == "rdma") *rdma_unavailable = address.status().message();
      HCOMM_LOG(info, core::log::kNet, "protocol %s not used: %s", entry.name.c_str(),
                address.status().to_string().c_str());
      continue;
    }
    p.address = address.value();
    out.push_back(std::move(p));
  }
  if (out.empty()) {
    std::string list;
    for (auto& n : names) list += ", " + n;
    return Status{HCOMM_ERR_INVALID_ARG, "HCOMM_TRANSPORT=" + cfg.transport +
                                             " is not a registered protocol: use auto" + list};
  }
  return out;
}

/// The communicator's keys in the rendezvous store, for LinkProtocol::prepare().
class StoreRendezvous final : public transport::Rendezvous {
 public:
  StoreRendezvous(bootstrap::StoreClient& client, std::string prefix)
      : client_(client), prefix_(std::move(prefix)) {}
  Status set(const std::string& key, const std::string& value) override {
    return client_.set(prefix_ + key, value);
  }
  Expected<std::string> get(const std::string& key, Deadline deadline) override {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return client_.get(prefix_ + key, std::max(left, std::chrono::milliseconds(1)));
  }

 private:
  bootstrap::StoreClient& client_;
  std::string prefix_;
};

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
  link_supervisor_actor supervisor;  // none without failover
  int rank = 0;
  uint64_t uid = 0;
  Config cfg;
  std::string local_ip;
  std::string host_id;
  // QoS: the class and its slot on the host board (-1: the communicator is not paced).
  std::mutex qos_mutex;
  QosClass qos;
  int qos_slot = -1;
  std::shared_ptr<qos::HostBoard> board;
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

  auto root = bootstrap::parse_host_port(cfg.root_addr);
  if (!root.ok()) return root.status();
  auto local = bootstrap::pick_local_address(cfg.socket_ifname, root->host);
  if (!local.ok()) return local.status();

  auto runtime = Runtime::acquire(cfg);
  if (cfg.rank == 0) {
    Status st = runtime->host_store(root->host, root->port);
    if (!st.ok()) return st;
  }
  auto store = bootstrap::StoreClient::connect(root->host, root->port, left());
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

  // Every protocol this communicator may use is opened and publishes an address.
  const topology::HostIdentity host = topology::this_host();
  ProtocolContext pctx;
  pctx.rank = cfg.rank;
  pctx.world_size = cfg.world_size;
  pctx.comm_uid = uid;
  pctx.host_id = host.id;
  pctx.interface_ip = local.value();
  std::string rdma_unavailable;
  auto opened = open_protocols(cfg, runtime->engine(), pctx, &rdma_unavailable);
  if (!opened.ok()) return opened.status();
  std::vector<OpenedProtocol>& protocols = opened.value();
  attach_mr_caches(*runtime);  // the RDMA devices just opened get their cache's actor

  // Failover: a TCP listener of its own for the fallback links, on HCOMM_FALLBACK_IFNAME's
  // network when set (e.g. a management network that survives a fabric fault).
  std::unique_ptr<transport::tcp::TcpProtocol> fallback;
  std::string fallback_address;
  if (cfg.failover != FailoverMode::off && cfg.world_size > 1) {
    std::string ip = local.value();
    if (!cfg.fallback_ifname.empty()) {
      auto a = bootstrap::pick_local_address(cfg.fallback_ifname, root->host);
      if (!a.ok())
        return Status{a.status().code(),
                      "HCOMM_FALLBACK_IFNAME=" + cfg.fallback_ifname + ": " + a.status().message()};
      ip = a.value();
    }
    fallback = std::make_unique<transport::tcp::TcpProtocol>();
    fallback->attach(runtime->engine(), cfg, qos::tos_of(cfg.qos));
    ProtocolContext fctx = pctx;
    fctx.interface_ip = ip;
    auto address = fallback->open(fctx);
    if (!address.ok())
      return Status{address.status().code(),
                    "the fallback TCP listener on " + ip + ": " + address.status().message()};
    fallback_address = address.value();
  }

  // The host key goes first and the "addr" key (its least preferred protocol's address) last: a
  // rank whose address is published has published the rest too.
  Status st = client.set(prefix + "host/" + std::to_string(cfg.rank), host.id + "\n" + host.name);
  if (!st.ok()) return st;
  std::string published;
  for (auto& p : protocols) published += p.name + "\t" + p.address + "\n";
  if (fallback)
    published +=
        "tcp-fallback\t" + fallback_address + "\nfailover\t" + to_string(cfg.failover) + "\n";
  st = client.set(prefix + "proto/" + std::to_string(cfg.rank), published);
  if (!st.ok()) return st;
  st = client.set(prefix + "addr/" + std::to_string(cfg.rank), protocols.back().address);
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
  std::vector<RankPlace> places(static_cast<size_t>(cfg.world_size));
  std::vector<std::map<std::string, std::string>> addresses(static_cast<size_t>(cfg.world_size));
  for (int r = 0; r < cfg.world_size; ++r) {
    auto& p = places[static_cast<size_t>(r)];
    auto v = client.get(keys[static_cast<size_t>(r)], left());
    if (!v.ok()) return v.status();
    p.endpoint = v.value();
    v = client.get(prefix + "host/" + std::to_string(r), left());
    if (!v.ok()) return v.status();
    const size_t nl = v.value().find('\n');
    p.host_id = v.value().substr(0, nl);
    p.host_name = nl == std::string::npos ? p.host_id : v.value().substr(nl + 1);
    v = client.get(prefix + "proto/" + std::to_string(r), left());
    if (!v.ok()) return v.status();
    std::istringstream lines(v.value());
    for (std::string line; std::getline(lines, line);) {
      const size_t tab = line.find('\t');
      if (tab != std::string::npos)
        addresses[static_cast<size_t>(r)][line.substr(0, tab)] = line.substr(tab + 1);
    }
  }
  HCOMM_LOG(info, core::log::kInit, "rank %d of %d listening on %s, rendezvous %s", cfg.rank,
            cfg.world_size, places[static_cast<size_t>(cfg.rank)].endpoint.c_str(),
            cfg.root_addr.c_str());

  // Per peer, the most preferred protocol both ranks opened that reaches it.
  DataPlaneParams params;
  params.comm_uid = uid;
  params.comm_id = static_cast<uint32_t>(uid ^ (uid >> 32));
  params.rank = cfg.rank;
  params.size = cfg.world_size;
  params.protocol_of.assign(static_cast<size_t>(cfg.world_size), nullptr);
  params.protocol_name_of.assign(static_cast<size_t>(cfg.world_size), "self");
  params.address_of.assign(static_cast<size_t>(cfg.world_size), "");
  std::vector<std::vector<int>> carried(protocols.size());
  for (int r = 0; r < cfg.world_size; ++r) {
    if (r == cfg.rank) continue;
    const auto& place = places[static_cast<size_t>(r)];
    const auto& theirs = addresses[static_cast<size_t>(r)];
    for (size_t i = 0; i < protocols.size(); ++i) {
      auto it = theirs.find(protocols[i].name);
      if (it == theirs.end()) continue;
      if (!protocols[i].protocol->reaches(r, place.host_id, it->second)) continue;
      params.protocol_of[static_cast<size_t>(r)] = protocols[i].protocol.get();
      params.protocol_name_of[static_cast<size_t>(r)] = protocols[i].name;
      params.address_of[static_cast<size_t>(r)] = it->second;
      carried[i].push_back(r);
      break;
    }
    if (params.protocol_of[static_cast<size_t>(r)] == nullptr)
      return Status{HCOMM_ERR_INVALID_ARG,
                    "HCOMM_TRANSPORT=" + cfg.transport + ", but that does not reach rank " +
                        std::to_string(r) + " on host " + place.host_name + " (" + place.host_id +
                        ") from this one (" + host.name +
                        "): use HCOMM_TRANSPORT=auto, or a transport every pair of ranks has"};
  }
  if (!rdma_unavailable.empty()) {
    bool tcp_across_hosts = false;
    for (int r = 0; r < cfg.world_size; ++r)
      tcp_across_hosts |= params.protocol_name_of[static_cast<size_t>(r)] == "tcp" &&
                          places[static_cast<size_t>(r)].host_id != host.id;
    static std::once_flag said;
    if (tcp_across_hosts)
      std::call_once(said, [&] {
        HCOMM_LOG(warn, core::log::kNet, "no RDMA, using TCP to other hosts: %s",
                  rdma_unavailable.c_str());
      });
  }

  // A reliable channel for every peer both ranks gave a fallback, except shared memory unless
  // both ask for it (HCOMM_FAILOVER=on): its medium fails only with the processes.
  params.config = cfg;
  params.reliable.assign(static_cast<size_t>(cfg.world_size), false);
  params.fallback_address_of.assign(static_cast<size_t>(cfg.world_size), "");
  std::map<int, failover::LinkSupervisor::Params> supervised;
  for (int r = 0; fallback && r < cfg.world_size; ++r) {
    const auto& theirs = addresses[static_cast<size_t>(r)];
    auto fb = theirs.find("tcp-fallback");
    if (r == cfg.rank || fb == theirs.end()) continue;
    auto mode = theirs.find("failover");
    const bool both_on =
        cfg.failover == FailoverMode::on && mode != theirs.end() && mode->second == "on";
    if (params.protocol_name_of[static_cast<size_t>(r)] == "shm" && !both_on) continue;
    params.reliable[static_cast<size_t>(r)] = true;
    params.fallback_address_of[static_cast<size_t>(r)] = fb->second;
    failover::LinkSupervisor::Params sp;
    sp.coordinator = cfg.rank < r;
    auto* lp = dynamic_cast<transport::LinkProtocol*>(params.protocol_of[static_cast<size_t>(r)]);
    sp.primary_redials = lp != nullptr && lp->can_redial();
    sp.failback_after = cfg.failback_after;
    sp.peer_timeout = cfg.peer_timeout;
    sp.reconnect_min = cfg.reconnect_min;
    sp.reconnect_max = cfg.reconnect_max;
    sp.failover_limit = cfg.failover_limit;
    sp.failover_window = cfg.failover_window;
    sp.seed = uid ^ (static_cast<uint64_t>(cfg.rank) << 32 | static_cast<uint64_t>(r));
    supervised.emplace(r, sp);
  }
  params.fallback = fallback.get();
  // QoS: traffic to other hosts goes through the process's send gate (paced once the
  // communicator has a class on the host board; see set_qos()).
  params.gate = &runtime->send_gate();
  params.shaped.assign(static_cast<size_t>(cfg.world_size), false);
  for (int r = 0; r < cfg.world_size; ++r)
    params.shaped[static_cast<size_t>(r)] =
        r != cfg.rank && params.protocol_name_of[static_cast<size_t>(r)] != "shm";

  // Protocols exchange what they need beyond their address, then application protocols connect.
  StoreRendezvous rendezvous(client, prefix);
  for (size_t i = 0; i < protocols.size(); ++i) {
    if (carried[i].empty()) continue;
    if (auto* lp = dynamic_cast<transport::LinkProtocol*>(protocols[i].protocol.get())) {
      st = lp->prepare(carried[i], rendezvous, deadline);
      if (!st.ok()) return st;
    }
  }
  std::vector<std::unique_ptr<Connection>> connections(static_cast<size_t>(cfg.world_size));
  for (int r = 0; r < cfg.world_size; ++r) {
    Protocol* p = params.protocol_of[static_cast<size_t>(r)];
    if (p == nullptr || dynamic_cast<transport::LinkProtocol*>(p) != nullptr) continue;
    auto conn = p->connect(r, params.address_of[static_cast<size_t>(r)], deadline);
    if (!conn.ok())
      return Status{conn.status().code(), params.protocol_name_of[static_cast<size_t>(r)] +
                                              ": connecting to rank " + std::to_string(r) + ": " +
                                              conn.status().message()};
    connections[static_cast<size_t>(r)] = std::move(conn.value());
  }

  // Every rank on this host: small collectives run on a slot board, without links.
  std::optional<transport::shm::SlotBoard> board;
  int ranks_here = 0;
  for (const auto& p : places) ranks_here += p.host_id == host.id;
  if ((cfg.auto_transport() || cfg.transport == "shm") && cfg.world_size > 1 &&
      ranks_here == cfg.world_size && cfg.world_size <= transport::shm::SlotBoard::kMaxRanks) {
    auto b = transport::shm::SlotBoard::establish(uid, cfg.rank, cfg.world_size, deadline);
    if (!b.ok()) return b.status();
    board = std::move(b.value());
  }

  std::vector<std::string> transports = params.protocol_name_of;
  std::vector<std::string> endpoints;  // for log lines about a peer
  for (int r = 0; r < cfg.world_size; ++r)
    endpoints.push_back(transports[static_cast<size_t>(r)] + " " +
                        params.address_of[static_cast<size_t>(r)]);
  std::vector<std::unique_ptr<Protocol>> owned;
  for (auto& p : protocols) owned.push_back(std::move(p.protocol));
  if (fallback) owned.push_back(std::move(fallback));
  auto plane = std::make_shared<DataPlane>(runtime->engine(), std::move(owned),
                                           std::move(connections), std::move(params));
  link_supervisor_actor supervisor;
  if (!supervised.empty()) {
    SupervisorState ss;
    ss.runtime = runtime;
    ss.plane = plane;
    supervisor = runtime->system().spawn(link_supervisor, std::move(ss), std::move(supervised));
    plane->set_event_sink([supervisor](const failover::ChannelEvent& e) {
      caf::anon_send(supervisor, channel_atom::value, e);
    });
  }

  CommunicatorState cs;
  cs.runtime = runtime;
  cs.plane = plane;
  cs.rank = cfg.rank;
  cs.size = cfg.world_size;
  cs.ready = std::make_shared<core::Completion>();
  auto ready = cs.ready;
  auto actor = runtime->system().spawn(communicator, std::move(cs), endpoints, deadline);

  auto state = std::make_unique<State>();
  state->runtime = runtime;
  state->plane = std::move(plane);  // the only owner (see CommunicatorState)
  state->actor = actor;
  state->supervisor = supervisor;
  state->rank = cfg.rank;
  state->uid = uid;
  state->cfg = cfg;
  state->local_ip = local.value();
  state->host_id = host.id;
  state->qos = cfg.qos;
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
  if (!cfg.qos.is_default() || cfg.link_gbps > 0) {
    Status q = control->set_qos(cfg.qos);
    if (!q.ok()) return q;
  }
  HCOMM_LOG(info, core::log::kInit, "communicator ready: rank %d of %d, %d stream(s) per peer",
            cfg.rank, cfg.world_size, cfg.sockets_per_peer);
  return control;
}

CommunicatorControl::CommunicatorControl(std::unique_ptr<State> state) : state_(std::move(state)) {}

CommunicatorControl::~CommunicatorControl() {
  caf::anon_send_exit(state_->actor, caf::exit_reason::user_shutdown);
  if (state_->supervisor) caf::anon_send_exit(state_->supervisor, caf::exit_reason::user_shutdown);
  auto closed = std::make_shared<std::promise<void>>();
  auto future = closed->get_future();
  // No copy of the plane stays on this thread: the last one goes on the engine thread below.
  state_->runtime->engine().post([plane = state_->plane, closed] {
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
  // Only now: the send gate no longer stamps the slot (the plane's close removed the class).
  if (state_->qos_slot >= 0) {
    leave_qos_controller(*state_->runtime, state_->uid);
    state_->board->release(state_->qos_slot);
  }
}

void CommunicatorControl::start(collectives::OperationPtr op, collectives::Schedule schedule,
                                bool caller_drives) {
  auto plane = state_->plane;
  // Engine tasks are std::function, hence copyable: the move-only schedule travels by pointer.
  auto steps = std::make_shared<collectives::Schedule>(std::move(schedule));
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

std::string CommunicatorControl::carrier_to(int peer) const {
  return state_->plane->carrier(peer);
}

FailoverStats CommunicatorControl::failover_stats() const {
  return state_->plane->recorder().snapshot();
}

std::vector<int> CommunicatorControl::lost_peers() const {
  std::vector<int> out;
  for (int r = 0; r < static_cast<int>(state_->places.size()); ++r)
    if (r != state_->rank && state_->plane->lost(r)) out.push_back(r);
  return out;
}

Expected<std::string> CommunicatorControl::host_shrink_store() {
  const std::string& endpoint = state_->places[static_cast<size_t>(state_->rank)].endpoint;
  const std::string ip = endpoint.substr(0, endpoint.rfind(':'));
  auto port = state_->runtime->host_extra_store(ip);
  if (!port.ok()) return port.status();
  return ip + ":" + std::to_string(port.value());
}

Status CommunicatorControl::set_qos(const QosClass& q) {
  Status st = q.validate();
  if (!st.ok()) return st;
  auto& s = *state_;
  std::lock_guard<std::mutex> lock(s.qos_mutex);
  if (s.qos_slot < 0) {
    auto board = qos::HostBoard::get(s.host_id);
    if (!board.ok()) return board.status();
    auto slot = board.value()->claim(s.uid, q);
    if (!slot.ok()) return slot.status();
    s.board = board.value();
    s.qos_slot = slot.value();
    std::string why, fallback_why;
    const double capacity = qos::link_capacity(s.cfg, s.local_ip, false, &why);
    const double fallback_capacity = qos::link_capacity(s.cfg, s.local_ip, true, &fallback_why);
    HCOMM_LOG(info, core::log::kNet, "qos: %s on a %.2f Gbit/s link (%s)", q.to_string().c_str(),
              capacity * 8 / 1e9, why.c_str());
    // Paced at its cap until the controller's first division, a few milliseconds away.
    auto& rt = *s.runtime;
    const uint64_t uid = s.uid;
    rt.engine().post([&rt, uid, q, capacity, board = s.board, slot = s.qos_slot] {
      rt.send_gate().add_class(uid, q.priority, capacity * q.max_rate / 100.0, board.get(), slot);
    });
    // Traffic on a fallback link is divided with the fallback's capacity.
    auto listener = [board = s.board, slot = s.qos_slot, &rt](bool on_fallback) {
      board->set_on_fallback(slot, on_fallback);
      nudge_qos_controller(rt);
    };
    rt.engine().post([plane = std::weak_ptr<DataPlane>(s.plane), listener] {
      if (auto live = plane.lock()) live->set_fallback_listener(listener);
    });
    join_qos_controller(rt, uid, s.host_id, s.qos_slot, capacity, fallback_capacity);
  } else {
    st = s.board->update(s.qos_slot, q);
    if (!st.ok()) return st;
    nudge_qos_controller(*s.runtime);
  }
  s.qos = q;
  s.runtime->engine().post([plane = std::weak_ptr<DataPlane>(s.plane), tos = qos::tos_of(q)] {
    if (auto live = plane.lock()) live->set_traffic_class(tos);
  });
  return {};
}

QosClass CommunicatorControl::qos() const {
  std::lock_guard<std::mutex> lock(state_->qos_mutex);
  return state_->qos;
}

void CommunicatorControl::abort(const std::string& reason) {
  state_->runtime->engine().post([plane = std::weak_ptr<DataPlane>(state_->plane), reason] {
    if (auto live = plane.lock()) live->abort(reason);
  });
}

}  // namespace hcomm::actors
