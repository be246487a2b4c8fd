#include "actors/qos_controller_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <deque>
#include <map>

#include "actors/messages.hpp"
#include "actors/runtime.hpp"
#include "core/log.hpp"
#include "qos/host_board.hpp"
#include "qos/send_gate.hpp"
#include "qos/share_allocator.hpp"

namespace hcomm::actors {
namespace {

using qos::allocate_shares;
using qos::ClassDemand;
using qos::HostBoard;
using qos::steady_ns;

constexpr const char* kName = "qos_controller";

struct Member {
  std::shared_ptr<HostBoard> board;
  int slot = -1;
  double capacity = 0;  // bytes/s
  double fallback_capacity = 0;
  double rate = -1;  // last given
  int priority = -1;
};

/// What a board slot sent over the last kWindow: its send rate. A window, not the last period
/// alone: a bulk class sends a multi-megabyte frame now and then, and its rate must not look
/// like zero between two frames.
struct Seen {
  static constexpr int64_t kWindowNs = 300'000'000;
  std::deque<std::pair<int64_t, uint64_t>> samples;  // (time, bytes sent so far)
  int64_t backlogged_ns = 0;                         // when it last had frames waiting
  double rate(int64_t now, uint64_t bytes) {
    samples.emplace_back(now, bytes);
    while (samples.size() > 2 && now - samples[1].first >= kWindowNs) samples.pop_front();
    const auto& [t0, b0] = samples.front();
    return now > t0 && bytes >= b0 ? static_cast<double>(bytes - b0) * 1e9 / (now - t0) : 0;
  }
};

struct ControllerState {
  Runtime* runtime = nullptr;
  std::map<uint64_t, Member> members;
  std::map<std::pair<HostBoard*, int>, Seen> seen;
  bool ticking = false;
};

void divide(qos_controller_actor::stateful_pointer<ControllerState> self) {
  auto& st = self->state;
  const int64_t now = steady_ns();
  std::map<HostBoard*, std::vector<HostBoard::Entry>> boards;
  for (auto& [comm, m] : st.members)
    if (!boards.count(m.board.get())) boards[m.board.get()] = m.board->read(now);
  // How fast each slot sends (smoothed over ~5 divisions).
  std::map<std::pair<HostBoard*, int>, double> sending;
  std::map<std::pair<HostBoard*, int>, bool> quiet;  // no frame waited over the window
  for (auto& [board, entries] : boards)
    for (const auto& e : entries) {
      Seen& s = st.seen[{board, e.slot}];
      if (e.backlogged) s.backlogged_ns = now;
      sending[{board, e.slot}] = s.rate(now, e.bytes_sent);
      quiet[{board, e.slot}] = now - s.backlogged_ns >= Seen::kWindowNs;
    }
  for (auto& [comm, m] : st.members) {
    const auto& entries = boards[m.board.get()];
    // One tenant per communicator: its ranks on this host share its rate.
    std::vector<uint64_t> tenants;
    std::vector<ClassDemand> demands;
    std::vector<int> ranks_here;
    std::vector<double> sends;
    std::vector<bool> backlogged;
    bool on_fallback = false;
    for (const auto& e : entries) {
      size_t t = std::find(tenants.begin(), tenants.end(), e.comm) - tenants.begin();
      if (t == tenants.size()) {
        tenants.push_back(e.comm);
        demands.push_back({e.qos.min_rate, e.qos.max_rate, e.qos.priority, false});
        ranks_here.push_back(0);
        sends.push_back(0);
        backlogged.push_back(false);
      }
      demands[t].active |= e.active;
      ++ranks_here[t];
      sends[t] += sending[{m.board.get(), e.slot}];
      backlogged[t] = backlogged[t] || !quiet[{m.board.get(), e.slot}];
      if (e.comm == comm) on_fallback |= e.on_fallback;
    }
    // A tenant that sends much less than it could, with nothing waiting for a whole window,
    // leaves the rest to the others (a latency-bound class sending small messages must not hold
    // a bulk class back).
    for (size_t t = 0; t < tenants.size(); ++t)
      if (demands[t].active && !backlogged[t]) demands[t].demand = sends[t] * 1.5;
    const size_t mine = std::find(tenants.begin(), tenants.end(), comm) - tenants.begin();
    if (mine == tenants.size()) continue;
    const double capacity = on_fallback ? m.fallback_capacity : m.capacity;
    const double rate = allocate_shares(capacity, demands)[mine] / ranks_here[mine];
    const int priority = demands[mine].priority;
    if (rate == m.rate && priority == m.priority) continue;
    m.rate = rate;
    m.priority = priority;
    HCOMM_LOG(debug, core::log::kNet,
              "qos: communicator %016llx: %.1f Mbit/s (priority %d, %d of %zu tenants busy)",
              static_cast<unsigned long long>(comm), rate * 8 / 1e6, priority,
              static_cast<int>(std::count_if(demands.begin(), demands.end(),
                                             [](const ClassDemand& d) { return d.active; })),
              demands.size());
    Runtime* rt = st.runtime;
    const uint64_t id = comm;  // a structured binding cannot be captured (C++17)
    rt->engine().post([rt, id, priority, rate] { rt->send_gate().set_class(id, priority, rate); });
  }
}

qos_controller_actor::behavior_type controller(
    qos_controller_actor::stateful_pointer<ControllerState> self, Runtime* runtime) {
  self->state.runtime = runtime;
  return {
      [=](qos_join_atom, uint64_t comm, const std::string& host_id, int32_t slot, double capacity,
          double fallback) {
        auto board = HostBoard::get(host_id);
        if (!board.ok()) {
          HCOMM_LOG(warn, core::log::kNet, "qos: %s", board.status().to_string().c_str());
          return;
        }
        self->state.members[comm] = {board.value(), slot, capacity, fallback, -1, -1};
        divide(self);
        if (!self->state.ticking) {
          self->state.ticking = true;
          self->delayed_send(self, kQosControllerPeriod, tick_atom::value);
        }
      },
      [=](qos_leave_atom, uint64_t comm) { self->state.members.erase(comm); },
      [=](qos_change_atom) {
        for (auto& [comm, m] : self->state.members) m.rate = -1;
        divide(self);
      },
      [=](tick_atom) {
        self->state.ticking = false;
        if (self->state.members.empty()) return;
        divide(self);
        self->state.ticking = true;
        self->delayed_send(self, kQosControllerPeriod, tick_atom::value);
      },
  };
}

qos_controller_actor find_or_spawn(Runtime& runtime) {
  runtime.ensure_process_actor(kName, [&] {
    return caf::actor_cast<caf::actor>(runtime.system().spawn(controller, &runtime));
  });
  return caf::actor_cast<qos_controller_actor>(runtime.process_actors(kName).front());
}

}  // namespace

void join_qos_controller(Runtime& runtime, uint64_t comm, const std::string& host_id, int slot,
                         double capacity, double fallback_capacity) {
  caf::anon_send(find_or_spawn(runtime), qos_join_atom::value, comm, host_id,
                 static_cast<int32_t>(slot), capacity, fallback_capacity);
}

void leave_qos_controller(Runtime& runtime, uint64_t comm) {
  caf::anon_send(find_or_spawn(runtime), qos_leave_atom::value, comm);
}

void nudge_qos_controller(Runtime& runtime) {
  caf::anon_send(find_or_spawn(runtime), qos_change_atom::value);
}

}  // namespace hcomm::actors
