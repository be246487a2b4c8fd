// The communicator actor (hcomm/actor.hpp) under hcomm-run -n N, in an actor system with ONE
// scheduler thread: a driver actor keeps 64 operation requests in flight through the actor
// interface until 640 have been answered, every result checked against hcomm_reference. If a
// handler blocked the only worker, no reply could arrive and the run would miss its deadline.
// Then: a request with bad arguments answers HCOMM_ERR_INVALID_ARG; control messages (info,
// subscribe, QoS with a bad and a good class, compression) answer as documented; an abort
// request stops the actor with HCOMM_ERR_ABORTED and its reason as the exit reason. With
// --lose-rank R instead: the loss of rank R (below).
// Prints "actor_requests: P passed, F failed"; exits 1 on a failure.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <hcomm/actor.hpp>
#include <hcomm/hcomm.hpp>

#include "tests/integration/checks.hpp"
#include "tools/reference/reduction.hpp"

using namespace hcomm;
namespace ha = hcomm::actor;
namespace ref = hcomm::tools::reference;
using namespace std::chrono_literals;

namespace {

constexpr int kInFlight = 64;
constexpr int kTotal = 640;
const caf::duration kDeadline{std::chrono::seconds(120)};

using checks::check;
using checks::failed;
using checks::passed;

/// Rank r's input element i of operation `seq` (small integers: every reduction is exact).
int32_t input(int r, int seq, size_t i) {
  return static_cast<int32_t>((r * 131 + seq * 7 + static_cast<int>(i)) % 1001) - 500;
}

enum class Kind { allreduce, broadcast, allgather, reduce_scatter, alltoall, ring_exchange };
constexpr int kKinds = 6;

/// One request in flight and the buffers it names (alive until its reply).
struct Slot {
  int seq = -1;
  Kind kind = Kind::allreduce;
  size_t count = 0;
  std::vector<int32_t> send, recv;
};

struct DriverState {
  int rank = 0, size = 0;
  std::vector<Slot> slots{kInFlight};
  int next_seq = 0, answered = 0, in_flight = 0, max_in_flight = 0;
  std::shared_ptr<std::promise<int>> done;  ///< set to max_in_flight once all were answered
};

void verify(const DriverState& st, const Slot& s) {
  const int n = st.size, me = st.rank;
  size_t wrong = 0;
  switch (s.kind) {
    case Kind::allreduce:
      for (size_t i = 0; i < s.count; ++i) {
        auto want = ref::reduction(DataType::int32, ReduceOp::sum, n,
                                   [&](int r) { return double(input(r, s.seq, i)); });
        wrong += !ref::matches(want, s.recv[i]);
      }
      break;
    case Kind::broadcast:
      for (size_t i = 0; i < s.count; ++i) wrong += s.send[i] != input(s.seq % n, s.seq, i);
      break;
    case Kind::allgather:
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < s.count; ++i) wrong += s.recv[r * s.count + i] != input(r, s.seq, i);
      break;
    case Kind::reduce_scatter:
      for (size_t i = 0; i < s.count; ++i) {
        auto want = ref::reduction(DataType::int32, ReduceOp::sum, n, [&](int r) {
          return double(input(r, s.seq, me * s.count + i));
        });
        wrong += !ref::matches(want, s.recv[i]);
      }
      break;
    case Kind::alltoall:  // block r of rank r's send is element offset me * count there
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < s.count; ++i)
          wrong += s.recv[r * s.count + i] != input(r, s.seq, me * s.count + i);
      break;
    case Kind::ring_exchange:
      for (size_t i = 0; i < s.count; ++i) wrong += s.recv[i] != input((me + n - 1) % n, s.seq, i);
      break;
  }
  check(wrong == 0, "operation #" + std::to_string(s.seq) + " (kind " +
                        std::to_string(int(s.kind)) + "): " + std::to_string(wrong) +
                        " wrong elements");
}

void issue(caf::stateful_actor<DriverState>* self, const ha::communicator_actor& comm, int slot);

void on_reply(caf::stateful_actor<DriverState>* self, const ha::communicator_actor& comm,
              int slot) {
  auto& st = self->state;
  --st.in_flight;
  ++st.answered;
  verify(st, st.slots[slot]);
  if (st.next_seq < kTotal)
    issue(self, comm, slot);
  else if (st.answered == kTotal)
    st.done->set_value(st.max_in_flight);
}

void issue(caf::stateful_actor<DriverState>* self, const ha::communicator_actor& comm, int slot) {
  auto& st = self->state;
  Slot& s = st.slots[slot];
  s.seq = st.next_seq++;
  s.kind = static_cast<Kind>(s.seq % kKinds);
  s.count = 1 + (static_cast<size_t>(s.seq) * 389) % 3001;
  const int n = st.size, me = st.rank;
  const bool blocks = s.kind == Kind::reduce_scatter || s.kind == Kind::alltoall;
  s.send.assign(blocks ? s.count * n : s.count, 0);
  for (size_t i = 0; i < s.send.size(); ++i) s.send[i] = input(me, s.seq, i);
  const bool gathers = s.kind == Kind::allgather || s.kind == Kind::alltoall;
  s.recv.assign(gathers ? s.count * n : s.count, -1);
  auto ok = [self, comm, slot](const ha::op_done&) { on_reply(self, comm, slot); };
  auto err = [self, comm, slot](const caf::error& e) {
    check(false, "operation #" + std::to_string(self->state.slots[slot].seq) + ": " +
                     ha::status_of(e).to_string());
    on_reply(self, comm, slot);
  };
  const auto i32 = DataType::int32;
  switch (s.kind) {
    case Kind::allreduce:
      self->request(
              comm, kDeadline,
              ha::allreduce_request{s.send.data(), s.recv.data(), s.count, i32, ReduceOp::sum})
          .then(ok, err);
      break;
    case Kind::broadcast:
      self->request(comm, kDeadline, ha::broadcast_request{s.send.data(), s.count, i32, s.seq % n})
          .then(ok, err);
      break;
    case Kind::allgather:
      self->request(comm, kDeadline,
                    ha::allgather_request{s.send.data(), s.recv.data(), s.count, i32})
          .then(ok, err);
      break;
    case Kind::reduce_scatter:
      self->request(
              comm, kDeadline,
              ha::reduce_scatter_request{s.send.data(), s.recv.data(), s.count, i32, ReduceOp::sum})
          .then(ok, err);
      break;
    case Kind::alltoall:
      self->request(comm, kDeadline,
                    ha::alltoall_request{s.send.data(), s.recv.data(), s.count, i32})
          .then(ok, err);
      break;
    case Kind::ring_exchange: {
      ha::batch_request b;
      b.ops.push_back(
          {PointToPointOp::Kind::send, s.send.data(), s.count, i32, (me + 1) % n, s.seq});
      b.ops.push_back(
          {PointToPointOp::Kind::recv, s.recv.data(), s.count, i32, (me + n - 1) % n, s.seq});
      self->request(comm, kDeadline, std::move(b)).then(ok, err);
      break;
    }
  }
  st.max_in_flight = std::max(st.max_in_flight, ++st.in_flight);
}

/// The 640 requests, 64 at a time, from one actor.
void keep_64_in_flight(caf::actor_system& sys, const ha::communicator_actor& comm, int rank,
                       int size) {
  auto outcome = std::make_shared<std::promise<int>>();
  auto done = outcome->get_future();
  // Rank and size go as spawn arguments: CAF 0.17 binds a reference to a null tuple for an actor
  // spawned without any (UBSan reports it in caf/detail/init_fun_factory.hpp).
  auto driver = sys.spawn(
      [=](caf::stateful_actor<DriverState>* self, int my_rank, int world) -> caf::behavior {
        self->state.rank = my_rank;
        self->state.size = world;
        self->state.done = outcome;
        for (int s = 0; s < kInFlight; ++s) issue(self, comm, s);
        return {[](caf::ok_atom) {}};
      },
      rank, size);
  const bool arrived = done.wait_for(150s) == std::future_status::ready;
  check(arrived, "all 640 replies arrived within 150 s (one scheduler thread)");
  if (arrived) {
    const int max_in_flight = done.get();
    check(max_in_flight == kInFlight,
          std::to_string(max_in_flight) + " requests were in flight at once, expected 64");
  }
  caf::anon_send_exit(driver, caf::exit_reason::user_shutdown);
}

void control_messages(caf::scoped_actor& self, const ha::communicator_actor& comm, int rank,
                      int size) {
  std::vector<int32_t> buf(16, 1);
  // Null receive buffer: every rank passes it, every rank's request fails alike.
  self->request(comm, kDeadline,
                ha::allreduce_request{buf.data(), nullptr, 16, DataType::int32, ReduceOp::sum})
      .receive([](const ha::op_done&) { check(false, "a null receive buffer was accepted"); },
               [](const caf::error& e) {
                 check(ha::status_of(e).code() == HCOMM_ERR_INVALID_ARG,
                       "a null receive buffer answers HCOMM_ERR_INVALID_ARG: " +
                           ha::status_of(e).to_string());
               });
  self->request(comm, kDeadline, ha::info_atom::value)
      .receive(
          [&](const ha::communicator_info& info) {
            check(info.rank == rank && info.size == size &&
                      static_cast<int>(info.ranks.size()) == size,
                  "info names this rank and the world");
          },
          [](const caf::error& e) { check(false, "info: " + caf::to_string(e)); });
  self->request(comm, kDeadline, ha::subscribe_atom::value)
      .receive([](caf::ok_atom) { check(true, "subscribe"); },
               [](const caf::error& e) { check(false, "subscribe: " + caf::to_string(e)); });
  QosClass bad;
  bad.min_rate = 200;
  self->request(comm, kDeadline, ha::set_qos_atom::value, bad)
      .receive([](caf::ok_atom) { check(false, "a QoS class with min share 200% was accepted"); },
               [](const caf::error& e) {
                 check(ha::status_of(e).code() == HCOMM_ERR_INVALID_ARG,
                       "a min share of 200% answers HCOMM_ERR_INVALID_ARG");
               });
  self->request(comm, kDeadline, ha::set_compression_atom::value, Compression::fp16)
      .receive([](caf::ok_atom) {},
               [](const caf::error& e) { check(false, "set_compression: " + caf::to_string(e)); });
  self->request(comm, kDeadline, ha::get_compression_atom::value)
      .receive([](Compression c) { check(c == Compression::fp16, "compression is now fp16"); },
               [](const caf::error& e) { check(false, "get_compression: " + caf::to_string(e)); });
  // fp16 applies to floating-point frames: an int32 allreduce still sums exactly.
  std::vector<int32_t> out(16, 0);
  self->request(comm, kDeadline,
                ha::allreduce_request{buf.data(), out.data(), 16, DataType::int32, ReduceOp::sum})
      .receive([&](const ha::op_done&) { check(out[7] == size, "allreduce after the changes"); },
               [](const caf::error& e) { check(false, "allreduce: " + caf::to_string(e)); });
}

/// --lose-rank R: rank R vanishes (exits without a word) after a barrier; every other rank's
/// pending allreduce answers HCOMM_ERR_PEER_LOST, its subscriber hears of rank R's peer_lost
/// event, and the actor stops with HCOMM_ERR_PEER_LOST naming rank R.
void lose_a_rank(caf::scoped_actor& self, const ha::communicator_actor& comm, int rank, int lost) {
  self->request(comm, kDeadline, ha::subscribe_atom::value)
      .receive([](caf::ok_atom) {},
               [](const caf::error& e) { check(false, "subscribe: " + caf::to_string(e)); });
  self->request(comm, kDeadline, ha::barrier_request{})
      .receive([](const ha::op_done&) {},
               [](const caf::error& e) { check(false, "barrier: " + caf::to_string(e)); });
  if (rank == lost) std::_Exit(0);
  self->monitor(comm);
  std::vector<int32_t> in(1024, 1), out(1024, 0);
  self->request(
          comm, kDeadline,
          ha::allreduce_request{in.data(), out.data(), in.size(), DataType::int32, ReduceOp::sum})
      .receive([](const ha::op_done&) { check(false, "an allreduce without a rank succeeded"); },
               [](const caf::error& e) {
                 check(
                     ha::status_of(e).code() == HCOMM_ERR_PEER_LOST,
                     "the allreduce answers HCOMM_ERR_PEER_LOST: " + ha::status_of(e).to_string());
               });
  bool event = false, down = false;
  const std::string named = "rank " + std::to_string(lost);
  while (!down) {
    self->receive(
        [&](const LinkEvent& e) {
          if (e.kind == LinkEvent::Kind::peer_lost && e.peer == lost) event = true;
        },
        [&](const caf::down_msg& d) {
          down = true;
          const Status st = ha::status_of(d.reason);
          check(st.code() == HCOMM_ERR_PEER_LOST && st.message().find(named) != std::string::npos,
                "the exit reason names the lost rank: " + st.to_string());
        },
        caf::after(std::chrono::seconds(60)) >>
            [&] {
              check(false, "the actor did not stop within 60 s of the loss");
              down = true;
            });
  }
  check(event, "the subscriber heard of rank " + std::to_string(lost) + "'s peer_lost event");
}

}  // namespace

int main(int argc, char** argv) {
  const int lose = argc == 3 && std::string(argv[1]) == "--lose-rank" ? std::atoi(argv[2]) : -1;
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  auto env = Config::from_env();
  if (!env) {
    std::fprintf(stderr, "actor_requests: %s\n", env.status().to_string().c_str());
    return 1;
  }
  auto comm = ha::spawn_communicator(sys, env.value());
  if (!comm) {
    std::fprintf(stderr, "actor_requests: %s\n", comm.status().to_string().c_str());
    return 1;
  }
  caf::scoped_actor self{sys};
  int rank = -1, size = 0;
  self->request(*comm, kDeadline, ha::info_atom::value)
      .receive(
          [&](const ha::communicator_info& info) {
            rank = info.rank;
            size = info.size;
          },
          [](const caf::error& e) { check(false, "info: " + caf::to_string(e)); });
  if (size < 2) {
    std::fprintf(stderr, "actor_requests: run it with hcomm-run -n 2 or more\n");
    return 1;
  }
  if (lose >= 0) {
    lose_a_rank(self, *comm, rank, lose);
    std::printf("actor_requests: rank %d: %d passed, %d failed\n", rank, passed, failed);
    return failed == 0 ? 0 : 1;
  }
  keep_64_in_flight(sys, *comm, rank, size);
  control_messages(self, *comm, rank, size);

  // Abort: the exit reason is HCOMM_ERR_ABORTED with the reason given. Every rank aborts once
  // its checks are done; the barrier keeps the others' aborts from failing those, and may end
  // ABORTED itself on a rank that was still in it when a faster one aborted (as documented).
  self->request(*comm, kDeadline, ha::barrier_request{})
      .receive([](const ha::op_done&) {},
               [](const caf::error& e) {
                 check(ha::status_of(e).code() == HCOMM_ERR_ABORTED,
                       "barrier: " + ha::status_of(e).to_string());
               });
  self->monitor(*comm);
  self->send(*comm, ha::abort_atom::value, std::string("the test is over"));
  self->receive(
      [](const caf::down_msg& down) {
        const Status st = ha::status_of(down.reason);
        check(st.code() == HCOMM_ERR_ABORTED &&
                  st.message().find("the test is over") != std::string::npos,
              "the exit reason of an aborted actor: " + st.to_string());
      },
      caf::after(std::chrono::seconds(30)) >> [] { check(false, "no down message in 30 s"); });
  std::printf("actor_requests: rank %d: %d passed, %d failed\n", rank, passed, failed);
  return failed == 0 ? 0 : 1;
}
