// The fault API on real processes over TCP: Communicator::abort, lost_peers, failover_stats,
// RankInfo::transport, and shrink after a peer is SIGKILLed. One mode per launch:
//
//   hcomm-run -n 3 fault_api abort
//     Verified allreduces, then ranks 0 and 2 post an allreduce that rank 1 never joins (they
//     tell rank 1 so with a send it waits for), and rank 1 aborts from a second thread while a
//     receive of its own is in flight. Rank 1's operations (in flight and later) fail at once with
//     HCOMM_ERR_ABORTED carrying "test abort"; ranks 0 and 2's pending allreduce fails with
//     HCOMM_ERR_ABORTED naming rank 1 within 5 s, and their later operations fail at once.
//
//   hcomm-run -n 4 --keep-going fault_api shrink K      (tests/integration/fault_api_shrink.sh)
//     A verified allreduce and a barrier, then rank K raises SIGKILL. The survivors loop
//     allreduces until one fails with HCOMM_ERR_PEER_LOST (within HCOMM_PEER_TIMEOUT_MS + 3 s of
//     the kill), check lost_peers() == {K}, failover_stats() and ranks(), then shrink() to a
//     3-rank communicator numbered in the survivors' order and run a verified allreduce, a
//     broadcast from its rank 0 and a barrier on it.
//
// Run with HCOMM_TRANSPORT=tcp (failover applies to TCP and RDMA links, not shared memory) and
// HCOMM_PEER_TIMEOUT_MS=1500. Every check prints a PASS or FAIL line; the last line is
// "fault_api <mode>: RESULT PASS|FAIL ..."; the exit status is 0 only when every check passed.
// Every wait has a deadline, and a watchdog fails the rank (exit 3) if a call that cannot take a
// deadline (shrink, destruction) hangs.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <hcomm/hcomm.hpp>

#include "reference/elements.hpp"
#include "tests/integration/inputs.hpp"

using namespace hcomm;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

int g_rank = -1;
int passed = 0, failed = 0;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void check(bool ok, const std::string& what, const std::string& detail = "") {
  if (ok) {
    ++passed;
    std::printf("PASS %s%s%s\n", what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  } else {
    ++failed;
    std::printf("FAIL %s%s%s\n", what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  }
  std::fflush(stdout);
}

void note(const std::string& text) {
  std::printf("  %s\n", text.c_str());
  std::fflush(stdout);
}

bool contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

// A status with the expected code whose message contains `needle`.
void check_status(const Status& st, StatusCode code, const std::string& needle,
                  const std::string& what) {
  bool ok = st.code() == code && (needle.empty() || contains(st.message(), needle));
  check(ok, what,
        (ok ? ""
            : std::string("expected ") + status_code_name(code) +
                  (needle.empty() ? "" : " mentioning '" + needle + "'") + ", got ") +
            st.to_string());
}

// ---- watchdog: a hang in a call without a deadline (shrink, a destructor) is a failure, not a
// ctest timeout with nothing said.
std::mutex g_phase_mutex;
std::string g_phase = "start";
Clock::time_point g_phase_deadline = Clock::now() + std::chrono::seconds(30);

void phase(const std::string& name, std::chrono::seconds limit) {
  std::lock_guard<std::mutex> lock(g_phase_mutex);
  g_phase = name;
  g_phase_deadline = Clock::now() + limit;
}

void start_watchdog() {
  std::thread([] {
    for (;;) {
      std::this_thread::sleep_for(milliseconds(100));
      std::lock_guard<std::mutex> lock(g_phase_mutex);
      if (Clock::now() > g_phase_deadline) {
        std::printf("FAIL watchdog: phase '%s' ran past its deadline (a hang)\n", g_phase.c_str());
        std::printf("fault_api: RESULT FAIL (hung in '%s')\n", g_phase.c_str());
        std::fflush(stdout);
        _exit(3);
      }
    }
  }).detach();
}

// ---- verified collectives. Buffers of operations that may be left in flight after a missed
// deadline must outlive the communicator: they live in a Buffers object created before it.
struct Buffers {
  std::vector<unsigned char> send, recv;
  void size_for(size_t count, DataType t) {
    send.assign(count * dtype_size(t), 0);
    recv.assign(count * dtype_size(t), 0);
  }
};

// Allreduce of hcomm_test::input_value(rank, i) with `op`, compared element by element with the
// reference reduction over `size` ranks (hcomm_reference; exact: small integers, no avg).
void verified_allreduce(Communicator& c, Buffers& b, size_t count, DataType t, ReduceOp op,
                        const std::string& label) {
  namespace reference = hcomm::tools::reference;
  b.size_for(count, t);
  for (size_t i = 0; i < count; ++i)
    reference::store(t, b.send.data(), i, hcomm_test::input_value(c.rank(), i, op, t));
  Status st =
      c.allreduce_async(b.send.data(), b.recv.data(), count, t, op).wait(milliseconds(15000));
  if (!st.ok()) {
    check(false, label, st.to_string());
    return;
  }
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < count; ++i) {
    const auto want = hcomm_test::reduced(c.size(), i, op, t);
    if (!reference::matches(want, reference::load(t, b.recv.data(), i)) && wrong++ == 0) first = i;
  }
  check(wrong == 0, label,
        wrong == 0 ? std::to_string(count) + " elements"
                   : std::to_string(wrong) + " wrong, first at " + std::to_string(first) + ": " +
                         std::to_string(reference::load(t, b.recv.data(), first)) + " != " +
                         std::to_string(hcomm_test::reduced(c.size(), first, op, t).value));
}

void verified_allreduces(Communicator& c, Buffers& b, const std::string& prefix) {
  const DataType types[] = {DataType::int32, DataType::float32, DataType::float64};
  const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::max};
  for (DataType t : types)
    for (ReduceOp op : ops)
      for (size_t count : {size_t{1}, size_t{4099}, size_t{65537}})
        verified_allreduce(c, b, count, t, op,
                           prefix + "allreduce " + dtype_name(t) + " " + reduce_op_name(op) + " x" +
                               std::to_string(count));
}

// An operation that must fail at once (well under a second) with `code` mentioning `needle`.
void check_fails_at_once(const Work& w, StatusCode code, const std::string& needle,
                         const std::string& what) {
  auto t0 = Clock::now();
  Status st = w.wait(milliseconds(3000));
  double took = ms_since(t0);
  check_status(st, code, needle, what);
  check(took < 500, what + " fails at once", std::to_string(took) + " ms");
}

std::string list(const std::vector<int>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

// ---- a side channel between the ranks of one launch that does not use the communicator (for
// rank 1 to keep its aborted communicator until the others have checked theirs): files named
// after the launcher's pid and the rendezvous address.
std::string side_file(int rank) {
  std::string root = std::getenv("HCOMM_ROOT_ADDR") ? std::getenv("HCOMM_ROOT_ADDR") : "none";
  std::replace(root.begin(), root.end(), ':', '_');
  std::replace(root.begin(), root.end(), '/', '_');
  return "/tmp/hcomm_fault_api_" + std::to_string(getppid()) + "_" + root + "_done" +
         std::to_string(rank);
}

void touch(const std::string& path) {
  if (FILE* f = std::fopen(path.c_str(), "w")) std::fclose(f);
}

bool wait_for_file(const std::string& path, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

int finish(const char* mode) {
  std::printf("fault_api %s: RESULT %s (%d passed, %d failed)\n", mode, failed ? "FAIL" : "PASS",
              passed, failed);
  std::fflush(stdout);
  return failed == 0 ? 0 : 1;
}

std::unique_ptr<Communicator> create(int want_size) {
  phase("create", std::chrono::seconds(40));
  auto created = Communicator::create_from_env();
  if (!created) {
    check(false, "create", created.status().to_string());
    return nullptr;
  }
  std::unique_ptr<Communicator> c = std::move(*created);
  g_rank = c->rank();
  check(c->size() == want_size, "world size", std::to_string(c->size()));
  if (c->size() != want_size) return nullptr;
  // Every peer on the transport the test is run over: HCOMM_TRANSPORT=tcp (failover applies to
  // TCP links) or shm (aborts through the slot board).
  const char* forced = std::getenv("HCOMM_TRANSPORT");
  const std::string want = forced != nullptr && *forced != '\0' ? forced : "tcp";
  std::string wrong;
  for (const RankInfo& r : c->ranks())
    if (r.rank != c->rank() && (r.transport != want || r.primary_transport != want))
      wrong += " rank " + std::to_string(r.rank) + ": " + r.transport + "/" + r.primary_transport;
  check(wrong.empty(), "every peer on " + want + " (transport/primary_transport)",
        wrong.empty() ? "" : wrong + " (run with HCOMM_TRANSPORT=tcp or shm)");
  return c;
}

// ---------------------------------------------------------------------------------------- abort

constexpr int kTagPosted = 71;  // ranks 0 and 2 -> rank 1: "my allreduce is posted"
constexpr int kTagNever = 72;   // nobody sends it: rank 1's receive stays in flight

int abort_mode() {
  static Buffers b;  // outlives the communicator (operations may be left in flight)
  static Buffers pending_buf;
  static int32_t token = 0, never = 0;
  std::unique_ptr<Communicator> comm = create(3);
  if (!comm) return finish("abort");
  Communicator& c = *comm;
  const int rank = c.rank();

  phase("verified allreduces", std::chrono::seconds(60));
  verified_allreduces(c, b, "before abort: ");
  check(c.lost_peers().empty(), "no peer lost before the abort", list(c.lost_peers()));

  phase("abort", std::chrono::seconds(30));
  if (rank != 1) {
    // An allreduce rank 1 never joins: it can only end by rank 1's abort notice.
    const size_t count = 4099;
    pending_buf.size_for(count, DataType::float32);
    Work pending = c.allreduce_async(pending_buf.send.data(), pending_buf.recv.data(), count,
                                     DataType::float32, ReduceOp::sum);
    token = 100 + rank;
    Status st = c.send_async(&token, 1, DataType::int32, 1, kTagPosted).wait(milliseconds(10000));
    check_status(st, HCOMM_SUCCESS, "", "tell rank 1 the allreduce is posted");
    auto t_posted = Clock::now();
    st = pending.wait(milliseconds(8000));
    double took = ms_since(t_posted);
    check_status(st, HCOMM_ERR_ABORTED, "rank 1", "pending allreduce fails with the abort");
    check(took < 5000, "pending allreduce fails within 5 s", std::to_string(took) + " ms");
    note("pending allreduce -> " + st.to_string());

    const int other = rank == 0 ? 2 : 0;
    check_fails_at_once(
        c.allreduce_async(b.send.data(), b.recv.data(), 16, DataType::float32, ReduceOp::sum),
        HCOMM_ERR_ABORTED, "rank 1", "later allreduce");
    check_fails_at_once(c.barrier_async(), HCOMM_ERR_ABORTED, "rank 1", "later barrier");
    check_fails_at_once(c.broadcast_async(b.recv.data(), 16, DataType::float32, 0),
                        HCOMM_ERR_ABORTED, "rank 1", "later broadcast");
    check_fails_at_once(c.send_async(&token, 1, DataType::int32, other, 5), HCOMM_ERR_ABORTED,
                        "rank 1", "later send to rank " + std::to_string(other));
    check_fails_at_once(c.recv_async(&never, 1, DataType::int32, other, 5), HCOMM_ERR_ABORTED,
                        "rank 1", "later recv from rank " + std::to_string(other));
    FailoverStats fs = c.failover_stats();
    note("lost_peers " + list(c.lost_peers()) + ", peers_lost " + std::to_string(fs.peers_lost) +
         ", events " + std::to_string(fs.events.size()));
    touch(side_file(rank));  // rank 1 may now destroy its communicator
  } else {
    for (int peer : {0, 2}) {
      int32_t got = -1;
      Status st =
          c.recv_async(&got, 1, DataType::int32, peer, kTagPosted).wait(milliseconds(10000));
      check(st.ok() && got == 100 + peer,
            "rank " + std::to_string(peer) + " says its allreduce is posted",
            st.ok() ? "value " + std::to_string(got) : st.to_string());
    }
    // An operation in flight on this rank, then abort from another thread.
    Work in_flight = c.recv_async(&never, 1, DataType::int32, 0, kTagNever);
    check(!in_flight.test(), "a receive is in flight before the abort");
    auto t_abort = Clock::now();
    std::thread aborter([&c] { c.abort("test abort"); });
    aborter.join();
    double abort_ms = ms_since(t_abort);
    check(abort_ms < 500, "abort() from a second thread returns at once",
          std::to_string(abort_ms) + " ms");
    check_fails_at_once(in_flight, HCOMM_ERR_ABORTED, "test abort", "receive in flight");
    check_fails_at_once(
        c.allreduce_async(b.send.data(), b.recv.data(), 16, DataType::float32, ReduceOp::sum),
        HCOMM_ERR_ABORTED, "test abort", "later allreduce");
    check_fails_at_once(c.barrier_async(), HCOMM_ERR_ABORTED, "test abort", "later barrier");
    check_fails_at_once(c.send_async(&token, 1, DataType::int32, 0, 5), HCOMM_ERR_ABORTED,
                        "test abort", "later send to rank 0");
    c.abort("a second abort");  // idempotent; the first reason stays
    check_fails_at_once(
        c.allreduce_async(b.send.data(), b.recv.data(), 16, DataType::float32, ReduceOp::sum),
        HCOMM_ERR_ABORTED, "test abort", "allreduce after a second abort");
    // Keep the aborted communicator until the others have checked theirs, so that what they see
    // is the abort notice and not this rank leaving.
    for (int peer : {0, 2})
      check(wait_for_file(side_file(peer), milliseconds(20000)),
            "rank " + std::to_string(peer) + " finished its checks");
  }

  phase("destroy", std::chrono::seconds(20));
  auto t_destroy = Clock::now();
  comm.reset();
  note("destroyed the aborted communicator in " + std::to_string(ms_since(t_destroy)) + " ms");
  if (rank == 1)
    for (int peer : {0, 2}) std::remove(side_file(peer).c_str());
  return finish("abort");
}

// --------------------------------------------------------------------------------------- shrink

int shrink_mode(int killed) {
  static Buffers b;  // outlives the communicators (operations may be left in flight)
  std::unique_ptr<Communicator> comm = create(4);
  if (!comm) return finish("shrink");
  Communicator& c = *comm;
  const int rank = c.rank(), size = c.size();
  if (killed < 0 || killed >= size) {
    check(false, "rank to kill",
          std::to_string(killed) + " is not a rank of " + std::to_string(size));
    return finish("shrink");
  }
  const milliseconds peer_timeout = c.config().peer_timeout;
  note("peer_timeout " + std::to_string(peer_timeout.count()) + " ms, keepalive_timeout " +
       std::to_string(c.config().keepalive_timeout.count()) + " ms, failover " +
       to_string(c.config().failover));

  phase("verified allreduce", std::chrono::seconds(60));
  verified_allreduce(c, b, 4099, DataType::int32, ReduceOp::sum, "allreduce int32 sum x4099");
  verified_allreduce(c, b, 65537, DataType::float32, ReduceOp::sum, "allreduce float32 sum x65537");
  Status st = c.barrier_async().wait(milliseconds(15000));
  check_status(st, HCOMM_SUCCESS, "", "barrier before the kill");
  if (rank == killed) {
    std::printf("rank %d: raising SIGKILL\n", rank);
    std::fflush(stdout);
    raise(SIGKILL);
  }
  // The killed rank dies right after the barrier: time its loss from here.
  auto t_kill = Clock::now();

  phase("detect the loss", std::chrono::seconds(30));
  const milliseconds bound = peer_timeout + milliseconds(3000);
  const auto deadline = t_kill + bound;
  int succeeded = 0, attempts = 0;
  Status loss;
  const size_t count = 1024;
  b.size_for(count, DataType::float32);
  for (;;) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      loss = Status{HCOMM_ERR_TIMEOUT, "no failure before the deadline"};
      break;
    }
    ++attempts;
    loss = c.allreduce_async(b.send.data(), b.recv.data(), count, DataType::float32, ReduceOp::sum)
               .wait(left);
    if (!loss.ok()) break;
    ++succeeded;
  }
  double detect_ms = ms_since(t_kill);
  note("allreduce after the kill -> " + loss.to_string());
  check_status(loss, HCOMM_ERR_PEER_LOST, "", "an allreduce fails with the peer lost");
  check(loss.code() == HCOMM_ERR_PEER_LOST && detect_ms <= bound.count(),
        "loss detected within HCOMM_PEER_TIMEOUT_MS + 3 s",
        std::to_string(detect_ms) + " ms after the kill (bound " + std::to_string(bound.count()) +
            " ms, " + std::to_string(attempts) + " attempts, " + std::to_string(succeeded) +
            " succeeded)");
  check(contains(loss.message(), "rank " + std::to_string(killed)),
        "the failure names rank " + std::to_string(killed));

  // This rank's own supervisor declares the loss; an operation may fail first when another
  // survivor reports it, so give lost_peers() until the bound to agree.
  std::vector<int> lost = c.lost_peers();
  double lost_ms = detect_ms;
  while (lost != std::vector<int>{killed} && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
    lost = c.lost_peers();
    lost_ms = ms_since(t_kill);
  }
  check(lost == std::vector<int>{killed}, "lost_peers() == {" + std::to_string(killed) + "}",
        list(lost) + " at " + std::to_string(lost_ms) + " ms after the kill");
  FailoverStats fs = c.failover_stats();
  check(fs.peers_lost >= 1, "failover_stats().peers_lost >= 1", std::to_string(fs.peers_lost));
  const LinkEvent* lost_event = nullptr;
  for (const LinkEvent& e : fs.events)
    if (e.kind == LinkEvent::Kind::peer_lost && e.peer == killed) lost_event = &e;
  check(lost_event != nullptr, "a peer_lost event for rank " + std::to_string(killed),
        lost_event ? "detection " + std::to_string(lost_event->detection_ms) +
                         " ms, reason: " + lost_event->reason
                   : std::to_string(fs.events.size()) + " events");
  note("failovers " + std::to_string(fs.failovers) + ", reconnect attempts " +
       std::to_string(fs.reconnect_attempts) + ", reconnects " + std::to_string(fs.reconnects));
  std::vector<RankInfo> infos = c.ranks();
  check(infos.size() == 4 && infos[killed].transport == "lost",
        "ranks()[" + std::to_string(killed) + "].transport == \"lost\"",
        infos.size() == 4
            ? infos[killed].transport + " (primary " + infos[killed].primary_transport + ")"
            : std::to_string(infos.size()) + " ranks");
  check_fails_at_once(
      c.allreduce_async(b.send.data(), b.recv.data(), count, DataType::float32, ReduceOp::sum),
      HCOMM_ERR_PEER_LOST, "", "a later allreduce on the old communicator");

  phase("shrink", std::chrono::seconds(30));
  auto t_shrink = Clock::now();
  auto shrunk = c.shrink();
  double shrink_ms = ms_since(t_shrink);
  check_status(shrunk.status(), HCOMM_SUCCESS, "", "shrink()");
  note("shrink took " + std::to_string(shrink_ms) + " ms");
  if (!shrunk) return finish("shrink");
  std::unique_ptr<Communicator> fresh = std::move(*shrunk);
  Communicator& n = *fresh;
  std::vector<int> survivors;
  for (int r = 0; r < size; ++r)
    if (r != killed) survivors.push_back(r);
  const int want_rank = rank - (rank > killed ? 1 : 0);
  check(n.size() == 3 && n.rank() == want_rank,
        "new communicator: rank " + std::to_string(want_rank) + " of 3",
        "rank " + std::to_string(n.rank()) + " of " + std::to_string(n.size()));
  std::printf("new rank %d of size %d (was rank %d of %d; rank %d killed)\n", n.rank(), n.size(),
              rank, size, killed);
  std::fflush(stdout);
  if (n.size() != 3 || n.rank() != want_rank) return finish("shrink");
  check(n.lost_peers().empty(), "new communicator: no peer lost", list(n.lost_peers()));

  phase("new communicator", std::chrono::seconds(60));
  // The numbering agrees on every rank: element i of a sum of one-hot vectors is old rank + 1 of
  // new rank i.
  {
    std::vector<int32_t> onehot(3, 0), got(3, -1);
    onehot[static_cast<size_t>(n.rank())] = rank + 1;
    Status s = n.allreduce_async(onehot.data(), got.data(), 3, DataType::int32, ReduceOp::sum)
                   .wait(milliseconds(15000));
    bool ok = s.ok();
    std::string seen;
    for (int i = 0; i < 3; ++i) {
      ok = ok && got[i] == survivors[i] + 1;
      seen += " " + std::to_string(got[i] - 1);
    }
    check(ok, "new ranks are the survivors in order",
          s.ok() ? "old ranks by new rank:" + seen : s.to_string());
  }
  verified_allreduce(n, b, 4099, DataType::int32, ReduceOp::sum, "new: allreduce int32 sum x4099");
  verified_allreduce(n, b, 65537, DataType::float64, ReduceOp::max,
                     "new: allreduce float64 max x65537");
  verified_allreduce(n, b, 1, DataType::float32, ReduceOp::sum, "new: allreduce float32 sum x1");
  {
    const size_t bc = 10007;
    std::vector<int32_t> buf(bc);
    auto pattern = [&](size_t i) { return static_cast<int32_t>(i * 31 + survivors[0] * 1000003); };
    for (size_t i = 0; i < bc; ++i) buf[i] = n.rank() == 0 ? pattern(i) : -1;
    Status s = n.broadcast_async(buf.data(), bc, DataType::int32, 0).wait(milliseconds(15000));
    size_t wrong = 0;
    for (size_t i = 0; i < bc; ++i) wrong += buf[i] != pattern(i);
    check(s.ok() && wrong == 0, "new: broadcast int32 x10007 from new rank 0",
          s.ok() ? std::to_string(wrong) + " wrong" : s.to_string());
  }
  check_status(n.barrier_async().wait(milliseconds(15000)), HCOMM_SUCCESS, "", "new: barrier");
  std::string wrong;
  for (const RankInfo& r : n.ranks())
    if (r.rank != n.rank() && r.transport != "tcp")
      wrong += " " + std::to_string(r.rank) + ":" + r.transport;
  check(n.ranks().size() == 3 && wrong.empty(), "new: ranks() lists 3 ranks on tcp", wrong);
  // A last barrier so that no survivor destroys its communicator while another still checks.
  check_status(n.barrier_async().wait(milliseconds(15000)), HCOMM_SUCCESS, "",
               "new: final barrier");

  phase("destroy", std::chrono::seconds(20));
  auto t_destroy = Clock::now();
  fresh.reset();
  comm.reset();
  note("destroyed both communicators in " + std::to_string(ms_since(t_destroy)) + " ms");
  return finish("shrink");
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  start_watchdog();
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "abort") return abort_mode();
  if (mode == "shrink" && argc > 2) return shrink_mode(std::atoi(argv[2]));
  std::fprintf(stderr,
               "usage: hcomm-run -n 3 %s abort\n"
               "       hcomm-run -n 4 --keep-going %s shrink RANK_TO_KILL\n"
               "(with HCOMM_TRANSPORT=tcp HCOMM_PEER_TIMEOUT_MS=1500)\n",
               argv[0], argv[0]);
  return 2;
}
