#include "actors/communicator_actors.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/messages.hpp"
#include "actors/runtime.hpp"
#include "core/log.hpp"

namespace hcomm::actors {

using dataplane::DataPlane;

// ---------------------------------------------------------------------------------------------
// communicator actor

namespace {

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
        // The engine failed the link's operations already, and the connection manager logged
        // why; a reliable channel's faults go to the link supervisor instead.
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

}  // namespace

// ---------------------------------------------------------------------------------------------
// the handle

struct CommunicatorActors::Handles {
  communicator_actor communicator;
  link_supervisor_actor supervisor;  // none without supervised peers
};

CommunicatorActors::CommunicatorActors(std::unique_ptr<Handles> handles)
    : handles_(std::move(handles)) {}

std::unique_ptr<CommunicatorActors> CommunicatorActors::spawn(
    std::shared_ptr<Runtime> runtime, const std::shared_ptr<DataPlane>& plane, int rank,
    std::vector<std::string> endpoints, std::map<int, failover::LinkSupervisor::Params> supervised,
    std::chrono::steady_clock::time_point deadline, std::shared_ptr<core::Completion> ready) {
  auto handles = std::make_unique<Handles>();
  if (!supervised.empty()) {
    SupervisorState ss;
    ss.runtime = runtime;
    ss.plane = plane;
    auto supervisor =
        runtime->system().spawn(link_supervisor, std::move(ss), std::move(supervised));
    plane->set_event_sink([supervisor](const failover::ChannelEvent& e) {
      caf::anon_send(supervisor, channel_atom::value, e);
    });
    handles->supervisor = supervisor;
  }
  CommunicatorState cs;
  cs.runtime = runtime;
  cs.plane = plane;
  cs.rank = rank;
  cs.size = plane->size();
  cs.ready = std::move(ready);
  handles->communicator =
      runtime->system().spawn(communicator, std::move(cs), std::move(endpoints), deadline);
  return std::unique_ptr<CommunicatorActors>(new CommunicatorActors(std::move(handles)));
}

CommunicatorActors::~CommunicatorActors() {
  caf::anon_send_exit(handles_->communicator, caf::exit_reason::user_shutdown);
  if (handles_->supervisor)
    caf::anon_send_exit(handles_->supervisor, caf::exit_reason::user_shutdown);
}

}  // namespace hcomm::actors
