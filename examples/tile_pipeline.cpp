// A tile-parallel CAF application over the communicator actor (hcomm/actor.hpp), after the
// seeds' pairing of hcomm with a tile scheduler. Run: hcomm-run -n 2 ./example_tile_pipeline
//
// The computation (tile_grid.hpp): a grid of tiles advanced through stages; a tile of stage s
// needs its own and its neighbours' tiles of stage s - 1 (an input-dependency counter per tile),
// and its result goes to the tiles of stage s + 1 around it (its consumers). Tile columns belong
// to ranks (host affinity), rows to worker actors (worker affinity); an idle worker steals from
// the fullest queue. A tile whose consumer lives on another rank is sent there through the
// communicator actor; receives for the neighbours' tiles are posted ahead.
//
// The plan (how far ahead a rank may run, how many sends it keeps in flight to a peer) follows
// the links: when the communicator reports a failover to a peer, tiles whose inputs are all local
// may run further ahead (they fill the time the slow or stalled link costs) and fewer sends go
// to that peer at once (the fallback is the management network); at the failback the plan is
// restored. The program prints what it rescheduled, and with --baseline-ms (a fault-free run's
// time) the delay the fault added. The result's digest is the same whatever happened; --verify
// also computes it in one thread without communication and compares.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <hcomm/actor.hpp>
#include <hcomm/hcomm.hpp>

#include "tile_grid.hpp"

namespace ha = hcomm::actor;
using Clock = std::chrono::steady_clock;

namespace {

using compute_atom = caf::atom_constant<caf::atom("compute")>;

/// One tile to compute; its buffers stay untouched by others until the worker replies.
struct Task {
  int stage = 0, i = 0, j = 0;
  tile_grid::Inputs in;
  float* out = nullptr;
};

}  // namespace

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(Task)

namespace {

struct Options {
  tile_grid::Shape shape;
  int workers = 2;
  int window = 2;           ///< stages a rank may run ahead of its slowest tile
  int degraded_window = 6;  ///< ... for tiles with local inputs while a peer is degraded
  int sends = 8;            ///< sends in flight to a peer
  int degraded_sends = 2;   ///< ... to a degraded peer
  double baseline_ms = 0;
  bool verify = false;
};

const caf::duration kDeadline{std::chrono::seconds(120)};

struct WorkerState {
  std::vector<float> scratch;
};

caf::behavior worker(caf::stateful_actor<WorkerState>* self, tile_grid::Shape shape) {
  self->state.scratch.resize(2 * (shape.tile + 2) * (shape.tile + 2));
  return {[=](compute_atom, const Task& t) {
    tile_grid::compute_tile(shape, t.in, t.out, self->state.scratch.data());
    return caf::ok_atom::value;
  }};
}

/// What one rank's run ended with.
struct Outcome {
  bool ok = false;
  std::string error;
  std::vector<uint64_t> digests;  ///< every rank's, by rank
};

struct SchedulerState {
  Options opt;
  tile_grid::Shape g;
  ha::communicator_actor comm;
  int rank = 0;
  int ring = 0;                    ///< stage buffers: stage s lives in slot s % ring
  std::vector<float> tiles;        ///< ring x G x G tiles (own, and the neighbours' received)
  std::vector<int> sends_pending;  ///< per slot and tile: sends still reading it
  std::unordered_map<int64_t, int> deps;           ///< (stage, tile) -> inputs still missing
  std::set<std::tuple<int, int, int, int>> ready;  ///< (stage, boundary ? 0 : 1, i, j)
  std::vector<int> remaining;                      ///< per stage: own tiles not computed yet
  int low = 1;     ///< the lowest stage with an own tile not computed
  int posted = 0;  ///< receives are posted up to this stage
  struct Halo {
    int i, j, peer;
  };
  std::vector<Halo> halos;  ///< the neighbours' tiles this rank receives each stage
  int recvs_left = 0, sends_left = 0;
  std::vector<caf::actor> workers;
  std::vector<std::deque<Task>> queues;  ///< per worker
  std::vector<bool> busy;
  std::vector<int> computed, stolen;
  std::map<int, std::deque<Task>> send_queue;  ///< per peer: sends waiting for a place
  std::map<int, int> in_flight;                ///< per peer
  std::set<int> degraded;                      ///< peers on their fallback link
  int ahead = 0, held = 0;                     ///< while degraded: tiles run ahead, sends held
  std::vector<std::string> ahead_names;
  std::shared_ptr<std::promise<Outcome>> done;
  bool finishing = false, finished = false;
};
using Scheduler = caf::stateful_actor<SchedulerState>*;

float* tile_at(SchedulerState& st, int stage, int i, int j) {
  const size_t slot = static_cast<size_t>(stage % st.ring);
  return &st.tiles[(slot * st.g.tiles * st.g.tiles + st.g.index(i, j)) * st.g.tile_floats()];
}
int& pending_at(SchedulerState& st, int stage, int i, int j) {
  return st.sends_pending[(stage % st.ring) * st.g.tiles * st.g.tiles + st.g.index(i, j)];
}
bool inside(const tile_grid::Shape& g, int i, int j) {
  return i >= 0 && j >= 0 && i < g.tiles && j < g.tiles;
}
/// The other ranks that own a neighbour of tile column j.
std::set<int> peers_of(const SchedulerState& st, int j) {
  std::set<int> out;
  for (int nj : {j - 1, j + 1})
    if (nj >= 0 && nj < st.g.tiles && st.g.owner(nj) != st.rank) out.insert(st.g.owner(nj));
  return out;
}
int inputs_of(const tile_grid::Shape& g, int i, int j) {
  return 1 + inside(g, i - 1, j) + inside(g, i + 1, j) + inside(g, i, j - 1) + inside(g, i, j + 1);
}

void fail(Scheduler self, const std::string& what) {
  auto& st = self->state;
  if (st.finished) return;
  st.finished = true;
  st.done->set_value(Outcome{false, what, {}});
}

void dispatch(Scheduler self);
void pump_sends(Scheduler self, int peer);
void post_receives(Scheduler self);

/// Own tile (stage, i, j) has all its inputs; boundary tiles (outputs to a peer) go first.
void make_ready(SchedulerState& st, int stage, int i, int j) {
  st.ready.emplace(stage, peers_of(st, j).empty() ? 1 : 0, i, j);
}

/// One input of own tile (stage, i, j) is there.
void satisfy(Scheduler self, int stage, int i, int j) {
  auto& st = self->state;
  if (stage > st.g.stages || !inside(st.g, i, j) || st.g.owner(j) != st.rank) return;
  const int64_t key = static_cast<int64_t>(stage) * st.g.tiles * st.g.tiles + st.g.index(i, j);
  auto it = st.deps.try_emplace(key, inputs_of(st.g, i, j)).first;
  if (--it->second > 0) return;
  st.deps.erase(it);
  make_ready(st, stage, i, j);
}

/// The stages a tile may run ahead of the lowest unfinished one under the current plan.
int window_of(const SchedulerState& st, int j) {
  if (st.degraded.empty()) return st.opt.window;
  for (int p : peers_of(st, j))
    if (st.degraded.count(p)) return st.opt.window;  // its inputs cross a degraded link
  return st.opt.degraded_window;
}

void on_computed(Scheduler self, int w, const Task& t);

void assign(Scheduler self) {
  auto& st = self->state;
  for (size_t w = 0; w < st.workers.size(); ++w) {
    if (st.busy[w]) continue;
    auto* from = &st.queues[w];
    if (from->empty()) {  // steal from the back of the fullest queue
      for (auto& q : st.queues)
        if (q.size() > from->size()) from = &q;
      if (from->empty()) continue;
      ++st.stolen[w];
    }
    const bool own = from == &st.queues[w];
    Task t = own ? from->front() : from->back();
    own ? from->pop_front() : from->pop_back();
    st.busy[w] = true;
    self->request(st.workers[w], kDeadline, compute_atom::value, t)
        .then([=](caf::ok_atom) { on_computed(self, static_cast<int>(w), t); },
              [=](const caf::error& e) { fail(self, "worker: " + caf::to_string(e)); });
  }
}

void dispatch(Scheduler self) {
  auto& st = self->state;
  for (auto it = st.ready.begin(); it != st.ready.end();) {
    const auto [stage, boundary, i, j] = *it;
    (void)boundary;
    if (stage >= st.low + st.opt.degraded_window) break;  // nothing later can be eligible
    if (stage >= st.low + window_of(st, j) || pending_at(st, stage, i, j) > 0) {
      ++it;
      continue;
    }
    if (stage >= st.low + st.opt.window) {  // only the degraded plan lets it start now
      ++st.ahead;
      if (st.ahead_names.size() < 6)
        st.ahead_names.push_back("(" + std::to_string(stage) + "," + std::to_string(i) + "," +
                                 std::to_string(j) + ")");
    }
    const int before = stage - 1;  // a structured binding cannot be captured (C++17)
    auto at = [&](int y, int x) -> const float* {
      return inside(st.g, y, x) ? tile_at(st, before, y, x) : nullptr;
    };
    Task t{stage,
           i,
           j,
           {at(i, j), at(i - 1, j), at(i + 1, j), at(i, j - 1), at(i, j + 1)},
           tile_at(st, stage, i, j)};
    st.queues[static_cast<size_t>(i) * st.workers.size() / st.g.tiles].push_back(t);
    it = st.ready.erase(it);
  }
  assign(self);
}

void maybe_finish(Scheduler self) {
  auto& st = self->state;
  if (st.finishing || st.low <= st.g.stages || st.recvs_left > 0 || st.sends_left > 0) return;
  st.finishing = true;
  uint64_t mine = tile_grid::kFnvBasis;
  for (int i = 0; i < st.g.tiles; ++i)
    for (int j = 0; j < st.g.tiles; ++j)
      if (st.g.owner(j) == st.rank)
        mine = tile_grid::fnv1a(mine, tile_at(st, st.g.stages, i, j),
                                st.g.tile_floats() * sizeof(float));
  // Both buffers live until the reply: the handler below owns them.
  struct Digests {
    uint64_t mine;
    std::vector<uint64_t> all;
  };
  auto d = std::make_shared<Digests>(Digests{mine, std::vector<uint64_t>(st.g.ranks)});
  self->request(st.comm, kDeadline,
                ha::allgather_request{&d->mine, d->all.data(), 1, hcomm::DataType::int64})
      .then(
          [=](const ha::op_done&) {
            if (self->state.finished) return;
            self->state.finished = true;
            self->state.done->set_value(Outcome{true, "", d->all});
          },
          [=](const caf::error& e) { fail(self, "allgather: " + ha::status_of(e).to_string()); });
}

void on_computed(Scheduler self, int w, const Task& t) {
  auto& st = self->state;
  st.busy[w] = false;
  ++st.computed[w];
  for (auto [di, dj] : {std::pair{0, 0}, {-1, 0}, {1, 0}, {0, -1}, {0, 1}})
    satisfy(self, t.stage + 1, t.i + di, t.j + dj);
  if (t.stage < st.g.stages)
    for (int peer : peers_of(st, t.j)) {
      ++pending_at(st, t.stage, t.i, t.j);
      st.send_queue[peer].push_back(t);
      pump_sends(self, peer);
    }
  if (--st.remaining[t.stage] == 0)
    while (st.low <= st.g.stages && st.remaining[st.low] == 0) ++st.low;
  post_receives(self);
  dispatch(self);
  maybe_finish(self);
}

void pump_sends(Scheduler self, int peer) {
  auto& st = self->state;
  const int limit = st.degraded.count(peer) ? st.opt.degraded_sends : st.opt.sends;
  auto& queue = st.send_queue[peer];
  if (st.degraded.count(peer) && static_cast<int>(queue.size()) + st.in_flight[peer] > limit)
    st.held = std::max(st.held, static_cast<int>(queue.size()) + st.in_flight[peer] - limit);
  while (!queue.empty() && st.in_flight[peer] < limit) {
    Task t = queue.front();
    queue.pop_front();
    ++st.in_flight[peer];
    const int tag = t.stage * st.g.tiles * st.g.tiles + st.g.index(t.i, t.j);
    self->request(st.comm, kDeadline,
                  ha::send_request{t.out, st.g.tile_floats(), hcomm::DataType::float32, peer, tag})
        .then(
            [=](const ha::op_done&) {
              auto& s = self->state;
              --s.in_flight[peer];
              --s.sends_left;
              --pending_at(s, t.stage, t.i, t.j);
              pump_sends(self, peer);
              dispatch(self);
              maybe_finish(self);
            },
            [=](const caf::error& e) { fail(self, "send: " + ha::status_of(e).to_string()); });
  }
}

/// Receives for the neighbours' tiles of every stage whose slot is free.
void post_receives(Scheduler self) {
  auto& st = self->state;
  const int last = std::min(st.g.stages - 1, st.low + st.ring - 2);
  for (; st.posted < last;) {
    const int stage = ++st.posted;
    for (const auto& h : st.halos) {
      const int tag = stage * st.g.tiles * st.g.tiles + st.g.index(h.i, h.j);
      self->request(st.comm, kDeadline,
                    ha::recv_request{tile_at(st, stage, h.i, h.j), st.g.tile_floats(),
                                     hcomm::DataType::float32, h.peer, tag})
          .then(
              [=](const ha::op_done&) {
                --self->state.recvs_left;
                for (int dj : {-1, 1}) satisfy(self, stage + 1, h.i, h.j + dj);
                dispatch(self);
                maybe_finish(self);
              },
              [=](const caf::error& e) { fail(self, "recv: " + ha::status_of(e).to_string()); });
    }
  }
}

/// "lookahead 2 -> 6 stages for tiles with local inputs, sends in flight to rank 1: 8 -> 2".
std::string plan_change(const SchedulerState& st, int peer, bool degrading) {
  auto change = [&](int normal, int degraded) {
    return degrading ? std::to_string(normal) + " -> " + std::to_string(degraded)
                     : std::to_string(degraded) + " -> " + std::to_string(normal);
  };
  return "lookahead " + change(st.opt.window, st.opt.degraded_window) +
         " stages for tiles with local inputs, sends in flight to rank " + std::to_string(peer) +
         ": " + change(st.opt.sends, st.opt.degraded_sends);
}

void on_link_event(Scheduler self, const hcomm::LinkEvent& e) {
  auto& st = self->state;
  std::printf("rank %d: link event: %s, rank %d: %s -> %s (%s)", st.rank,
              hcomm::link_event_name(e.kind), e.peer, e.from.c_str(),
              e.to.empty() ? "-" : e.to.c_str(), e.reason.c_str());
  if (e.detection_ms > 0) std::printf(", detected after %.0f ms", e.detection_ms);
  std::printf("\n");
  if (e.kind == hcomm::LinkEvent::Kind::failover && !st.degraded.count(e.peer)) {
    st.degraded.insert(e.peer);
    st.ahead = st.held = 0;
    st.ahead_names.clear();
    const size_t queued = st.ready.size();
    dispatch(self);
    std::string names;
    for (const auto& n : st.ahead_names) names += " " + n;
    std::printf(
        "rank %d: rescheduled for the failover to rank %d: %s; %d of the %zu ready "
        "tiles started at once ahead of the normal plan:%s\n",
        st.rank, e.peer, plan_change(st, e.peer, true).c_str(), st.ahead, queued, names.c_str());
  } else if (e.kind == hcomm::LinkEvent::Kind::failback && st.degraded.count(e.peer)) {
    st.degraded.erase(e.peer);
    std::string names;
    for (const auto& n : st.ahead_names) names += " " + n;
    std::printf(
        "rank %d: plan restored on the failback of rank %d: %s; while degraded, %d "
        "tiles (stage,row,column) ran ahead of the normal plan (first:%s) and up to %d "
        "sends waited for a place\n",
        st.rank, e.peer, plan_change(st, e.peer, false).c_str(), st.ahead, names.c_str(), st.held);
    pump_sends(self, e.peer);
    dispatch(self);
  }
  std::fflush(stdout);
}

caf::behavior scheduler(Scheduler self, Options opt, ha::communicator_actor comm, int rank,
                        std::shared_ptr<std::promise<Outcome>> done) {
  auto& st = self->state;
  st.opt = opt;
  st.g = opt.shape;
  st.comm = comm;
  st.rank = rank;
  st.done = std::move(done);
  st.ring = opt.degraded_window + 2;
  const auto& g = st.g;
  const size_t per_slot = static_cast<size_t>(g.tiles) * g.tiles;
  st.tiles.assign(st.ring * per_slot * g.tile_floats(), 0.f);
  st.sends_pending.assign(st.ring * per_slot, 0);
  st.remaining.assign(g.stages + 1, 0);
  for (int i = 0; i < g.tiles; ++i)
    for (int j = 0; j < g.tiles; ++j) {
      const bool mine = g.owner(j) == rank;
      bool neighbour = false;
      for (int dj : {-1, 1})
        neighbour |= j + dj >= 0 && j + dj < g.tiles && g.owner(j + dj) == rank;
      if (mine || neighbour) tile_grid::initial_tile(g, i, j, tile_at(st, 0, i, j));
      if (mine) {
        for (int s = 1; s <= g.stages; ++s) ++st.remaining[s];
        st.sends_left += (g.stages - 1) * static_cast<int>(peers_of(st, j).size());
      } else if (neighbour) {
        st.halos.push_back({i, j, g.owner(j)});
      }
    }
  st.recvs_left = (g.stages - 1) * static_cast<int>(st.halos.size());
  for (int w = 0; w < opt.workers; ++w) st.workers.push_back(self->spawn(worker, g));
  st.queues.resize(opt.workers);
  st.busy.assign(opt.workers, false);
  st.computed.assign(opt.workers, 0);
  st.stolen.assign(opt.workers, 0);
  for (int i = 0; i < g.tiles; ++i)  // stage 0 is there: every stage-1 tile is ready
    for (int j = 0; j < g.tiles; ++j)
      if (g.owner(j) == rank) make_ready(st, 1, i, j);
  self->request(comm, kDeadline, ha::subscribe_atom::value)
      .then(
          [=](caf::ok_atom) {
            post_receives(self);
            dispatch(self);
          },
          [=](const caf::error& e) { fail(self, "subscribe: " + caf::to_string(e)); });
  return {[=](const hcomm::LinkEvent& e) { on_link_event(self, e); },
          [=](caf::get_atom) {
            std::string out;
            for (size_t w = 0; w < self->state.workers.size(); ++w)
              out += " worker " + std::to_string(w) + ": " +
                     std::to_string(self->state.computed[w]) + " tiles (" +
                     std::to_string(self->state.stolen[w]) + " stolen);";
            return out;
          }};
}

bool parse(int argc, char** argv, Options& o) {
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto value = [&]() -> const char* { return a + 1 < argc ? argv[++a] : nullptr; };
    const char* v = nullptr;
    if (arg == "--verify") {
      o.verify = true;
      continue;
    }
    if (!(v = value())) return false;
    if (arg == "--tiles")
      o.shape.tiles = std::atoi(v);
    else if (arg == "--tile")
      o.shape.tile = std::atoi(v);
    else if (arg == "--stages")
      o.shape.stages = std::atoi(v);
    else if (arg == "--sweeps")
      o.shape.sweeps = std::atoi(v);
    else if (arg == "--workers")
      o.workers = std::atoi(v);
    else if (arg == "--baseline-ms")
      o.baseline_ms = std::atof(v);
    else
      return false;
  }
  return o.shape.tiles >= 2 && o.shape.tile >= 2 && o.shape.stages >= 2 && o.shape.sweeps >= 1 &&
         o.workers >= 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, opt)) {
    std::fprintf(stderr,
                 "usage: %s [--tiles G] [--tile B] [--stages S] [--sweeps K] [--workers W] "
                 "[--baseline-ms MS] [--verify]   (under hcomm-run; defaults 8 128 300 8 2)\n",
                 argv[0]);
    return 2;
  }
  auto env = hcomm::Config::from_env();
  if (!env) {
    std::fprintf(stderr, "tile_pipeline: %s\n", env.status().to_string().c_str());
    return 1;
  }
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", opt.workers + 1);
  caf::actor_system sys{cfg};
  auto comm = ha::spawn_communicator(sys, env.value());
  if (!comm) {
    std::fprintf(stderr, "tile_pipeline: %s\n", comm.status().to_string().c_str());
    return 1;
  }
  const int rank = env.value().rank;
  opt.shape.ranks = env.value().world_size;
  if (opt.shape.ranks > opt.shape.tiles) {
    std::fprintf(stderr, "tile_pipeline: more ranks than tile columns\n");
    return 2;
  }
  caf::scoped_actor self{sys};
  bool synced = false;
  self->request(*comm, kDeadline, ha::barrier_request{})
      .receive([&](const ha::op_done&) { synced = true; },
               [&](const caf::error& e) {
                 std::fprintf(stderr, "tile_pipeline: barrier: %s\n",
                              ha::status_of(e).to_string().c_str());
               });
  if (!synced) return 1;
  const auto start = Clock::now();
  auto promise = std::make_shared<std::promise<Outcome>>();
  auto future = promise->get_future();
  auto sched = sys.spawn(scheduler, opt, *comm, rank, promise);
  if (future.wait_for(std::chrono::seconds(600)) != std::future_status::ready) {
    std::fprintf(stderr, "tile_pipeline: rank %d did not finish within 600 s\n", rank);
    return 1;
  }
  Outcome out = future.get();
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!out.ok) {
    std::fprintf(stderr, "tile_pipeline: rank %d: %s\n", rank, out.error.c_str());
    return 1;
  }
  self->request(sched, kDeadline, caf::get_atom::value)
      .receive([&](const std::string& s) { std::printf("rank %d:%s\n", rank, s.c_str()); },
               [](const caf::error&) {});
  const auto& g = opt.shape;
  int rc = 0;
  if (rank == 0) {
    std::printf(
        "tile_pipeline: %d stages of %dx%d tiles of %dx%d floats on %d ranks in %.0f ms; "
        "digest %016llx\n",
        g.stages, g.tiles, g.tiles, g.tile, g.tile, g.ranks, ms,
        static_cast<unsigned long long>(tile_grid::combine(out.digests)));
    if (opt.baseline_ms > 0)
      std::printf(
          "tile_pipeline: the fault added %.0f ms to the run (%.0f ms against %.0f ms "
          "fault-free)\n",
          ms - opt.baseline_ms, ms, opt.baseline_ms);
    if (opt.verify) {
      const auto want = tile_grid::reference(g);
      const bool same = want == out.digests;
      std::printf("tile_pipeline: %s against the one-thread reference (digest %016llx)\n",
                  same ? "VERIFIED" : "WRONG",
                  static_cast<unsigned long long>(tile_grid::combine(want)));
      rc = same ? 0 : 1;
    }
  }
  std::fflush(stdout);
  self->send_exit(sched, caf::exit_reason::user_shutdown);
  self->monitor(*comm);
  self->send(*comm, ha::close_atom::value);
  self->receive([](const caf::down_msg&) {}, caf::after(std::chrono::seconds(30)) >> [] {});
  return rc;
}
