#include "actors/communicator_control.hpp"

#include <future>
#include <map>
#include <mutex>

#include "actors/communicator_actors.hpp"
#include "actors/mr_cache_actor.hpp"
#include "actors/qos_controller_actor.hpp"
#include "actors/runtime.hpp"
#include "bootstrap/interface_address.hpp"
#include "bootstrap/launch_env.hpp"
#include "bootstrap/store_client.hpp"
#include "core/log.hpp"
#include "core/parse.hpp"
#include "dataplane/creation_phases.hpp"
#include "dataplane/data_plane.hpp"
#include "dataplane/peer_plan.hpp"
#include "qos/host_board.hpp"
#include "qos/link_capacity.hpp"
#include "qos/marking.hpp"
#include "qos/send_gate.hpp"

namespace hcomm::actors {

using dataplane::DataPlane;

struct CommunicatorControl::State {
  std::shared_ptr<Runtime> runtime;
  std::shared_ptr<DataPlane> plane;  // the only owner (see CommunicatorActors::spawn)
  std::shared_ptr<collectives::CompressionPolicy> compression;
  std::unique_ptr<CommunicatorActors> actors;
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
  std::string launch_error_key;
};

namespace {

/// Per supervised peer (one with a reliable channel), its LinkSupervisor's settings.
std::map<int, failover::LinkSupervisor::Params> supervision(
    const Config& cfg, uint64_t uid, const std::vector<dataplane::PeerPlan>& peers) {
  std::map<int, failover::LinkSupervisor::Params> supervised;
  for (const dataplane::PeerPlan& p : peers) {
    if (!p.reliable) continue;
    failover::LinkSupervisor::Params sp;
    sp.coordinator = cfg.rank < p.rank;
    sp.primary_redials = p.protocol->can_redial();
    sp.failback_after = cfg.failback_after;
    sp.gray_hold = cfg.gray_hold;
    sp.multipath = dataplane::multipath_enabled(cfg);
    sp.peer_timeout = cfg.peer_timeout;
    sp.reconnect_min = cfg.reconnect_min;
    sp.reconnect_max = cfg.reconnect_max;
    sp.failover_limit = cfg.failover_limit;
    sp.failover_window = cfg.failover_window;
    sp.seed = uid ^ (static_cast<uint64_t>(cfg.rank) << 32 | static_cast<uint64_t>(p.rank));
    supervised.emplace(p.rank, sp);
  }
  return supervised;
}

}  // namespace

Expected<std::unique_ptr<CommunicatorControl>> CommunicatorControl::establish(const Config& cfg) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + cfg.connect_timeout;

  auto root = bootstrap::parse_host_port(cfg.root_addr);
  if (!root.ok()) return root.status();
  const auto ifnames = core::split_list(cfg.socket_ifname);
  auto local = bootstrap::pick_local_address(ifnames.empty() ? "" : ifnames[0], root->host);
  if (!local.ok()) return local.status();
  auto key = core::JobKey::from_environment();
  if (!key.ok()) return key.status();
  auto runtime = Runtime::acquire(cfg);
  if (cfg.rank == 0) {
    Status st = runtime->host_store(root->host, root->port);
    if (!st.ok()) return st;
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  auto store = bootstrap::StoreClient::connect(
      root->host, root->port, std::max(left, std::chrono::milliseconds(1)), key.value());
  if (!store.ok()) return store.status();

  const std::string prefix =
      "comm/" +
      std::to_string(runtime->next_generation(root->host + ":" + std::to_string(root->port))) + "/";
  dataplane::CreationPhases phases(cfg, *store.value(), prefix, local.value(), runtime->engine(),
                                   deadline);
  // Every failure from here on. The store goes with rank 0's runtime: after a launching mistake
  // it first waits (3 s at most) until the other processes, this one's own client aside, have
  // read it and gone, so that each of them reports the mistake rather than a lost connection.
  auto failed = [&](Status st) {
    if (cfg.rank == 0 && !phases.posted_launch_error().ok()) {
      HCOMM_LOG(debug, core::log::kInit, "keeping the rendezvous store until the others left");
      runtime->linger_store(root->port, 1, Clock::now() + std::chrono::seconds(3));
    }
    return st;
  };
  for (auto phase : dataplane::CreationPhases::all()) {
    Status st = (phases.*phase)();
    if (!st.ok()) return failed(st);
  }
  attach_mr_caches(*runtime);  // the RDMA devices just opened get their cache's actor

  const uint64_t uid = phases.uid();
  dataplane::DataPlaneParams params;
  params.comm_uid = uid;
  params.comm_id = static_cast<uint32_t>(uid ^ (uid >> 32));
  params.rank = cfg.rank;
  params.peers = phases.peers();
  params.fallback = phases.fallback();
  params.config = cfg;
  params.gate = &runtime->send_gate();
  {
    std::vector<bool> same_host;
    for (const dataplane::PeerPlan& p : params.peers)
      same_host.push_back(p.record.host_id == phases.host().id);
    params.compression = std::make_shared<collectives::CompressionPolicy>(
        std::move(same_host), cfg.comp_threshold, cfg.comp_error_feedback);
  }
  auto compression = params.compression;
  std::vector<std::string> endpoints;  // for log lines about a peer
  std::vector<std::string> transports;
  std::vector<RankPlace> places;
  for (const dataplane::PeerPlan& p : params.peers) {
    endpoints.push_back(p.protocol_name + " " + p.address);
    transports.push_back(p.protocol_name);
    places.push_back(p.record);
  }
  auto supervised = supervision(cfg, uid, params.peers);
  auto plane =
      std::make_shared<DataPlane>(runtime->engine(), phases.take_protocols(), std::move(params));
  auto ready = std::make_shared<core::Completion>();

  auto state = std::make_unique<State>();
  state->runtime = runtime;
  state->actors = CommunicatorActors::spawn(runtime, plane, cfg.rank, std::move(endpoints),
                                            std::move(supervised), deadline, ready);
  state->plane = std::move(plane);
  state->compression = std::move(compression);
  state->rank = cfg.rank;
  state->uid = uid;
  state->launch_error_key = phases.launch_error_key();
  state->cfg = cfg;
  state->local_ip = local.value();
  state->host_id = phases.host().id;
  state->qos = cfg.qos;
  state->local_ranks = phases.local_ranks();
  state->places = std::move(places);
  state->transports = std::move(transports);
  state->slot_board = phases.take_slot_board();
  std::unique_ptr<CommunicatorControl> control(new CommunicatorControl(std::move(state)));
  // A little past the deadline: the links report their own timeouts with better messages. In
  // slices: a launching mistake posted meanwhile (a duplicate that reached the rendezvous late)
  // ends the wait, as the links to a process that gave up would never come up.
  const auto wait_end = deadline + std::chrono::seconds(2);
  while (!ready->wait_until(std::min(wait_end, Clock::now() + std::chrono::milliseconds(200)))) {
    if (Status late = phases.posted_launch_error(); !late.ok()) return failed(late);
    if (Clock::now() >= wait_end)
      return failed({HCOMM_ERR_TIMEOUT, "connecting to the peers did not finish within " +
                                            std::to_string(cfg.connect_timeout.count()) + " ms"});
  }
  if (Status late = phases.posted_launch_error(); !late.ok()) return failed(late);
  if (!ready->status().ok()) return failed(ready->status());
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
  state_->actors.reset();
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
                                transport::ProgressEngine::Waker waker) {
  auto plane = state_->plane;
  // Engine tasks are std::function, hence copyable: the move-only schedule travels by pointer.
  auto steps = std::make_shared<collectives::Schedule>(std::move(schedule));
  auto task = [plane, op = std::move(op), steps]() mutable {
    plane->start(std::move(op), std::move(*steps));
  };
  state_->runtime->engine().post(std::move(task), waker);
}

void CommunicatorControl::with_plane(std::function<void(dataplane::DataPlane&)> task) {
  state_->runtime->engine().post(
      [plane = std::weak_ptr<dataplane::DataPlane>(state_->plane), task = std::move(task)] {
        if (auto p = plane.lock()) task(*p);
      });
}

void CommunicatorControl::wake_engine() {
  state_->runtime->engine().wake_for_work();
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

collectives::CompressionPolicy& CommunicatorControl::compression() const {
  return *state_->compression;
}

FailoverStats CommunicatorControl::failover_stats() const {
  return state_->plane->recorder().snapshot();
}

void CommunicatorControl::on_link_event(std::function<void(const LinkEvent&)> callback) const {
  state_->plane->recorder().set_listener(std::move(callback));
}

std::vector<int> CommunicatorControl::lost_peers() const {
  std::vector<int> out;
  for (int r = 0; r < static_cast<int>(state_->places.size()); ++r)
    if (r != state_->rank && state_->plane->lost(r)) out.push_back(r);
  return out;
}

int CommunicatorControl::peers_on_fallback() const {
  int n = 0;
  for (int r = 0; r < static_cast<int>(state_->places.size()); ++r)
    n += r != state_->rank && state_->plane->on_fallback(r) ? 1 : 0;
  return n;
}

uint64_t CommunicatorControl::uid() const {
  return state_->uid;
}

const std::string& CommunicatorControl::launch_error_key() const {
  return state_->launch_error_key;
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

void CommunicatorControl::abort(const std::string& reason, std::function<void()> then) {
  state_->runtime->engine().post(
      [plane = std::weak_ptr<DataPlane>(state_->plane), reason, then = std::move(then)] {
        if (auto live = plane.lock()) live->abort(reason);
        if (then) then();
      });
}

}  // namespace hcomm::actors
