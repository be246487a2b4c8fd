// Bad input gets the documented status and a message, never a crash or a hang; the communicator
// stays usable afterwards. Under hcomm-run -n N (N >= 2), or alone with --alone for the
// creation errors (unreachable root, ranks that never arrive, bad configuration).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <hcomm/hcomm.hpp>

#include "reference/reduction.hpp"

using namespace hcomm;
using Clock = std::chrono::steady_clock;
using hcomm::tools::reference::matches;

namespace {

/// The float32 sum over `size` ranks of input(rank) (hcomm_reference): what an allreduce or
/// reduce of them must give.
template <class Input>
tools::reference::Expectation summed(int size, const Input& input) {
  return tools::reference::reduction(DataType::float32, ReduceOp::sum, size, input);
}

int passed = 0, failed = 0;

void expect(const Status& st, StatusCode code, const char* needle, const std::string& what) {
  bool ok =
      st.code() == code && (needle == nullptr || st.message().find(needle) != std::string::npos);
  if (ok) {
    ++passed;
  } else {
    ++failed;
    std::fprintf(stderr, "FAILED %s: expected %s%s%s, got %s\n", what.c_str(),
                 status_code_name(code), needle ? " mentioning " : "", needle ? needle : "",
                 st.to_string().c_str());
  }
}

// For a rank whose part of a collective may finish before the failing rank's abort reaches it
// (a rank that only sends, as with MPI, completes once its bytes are handed to the transport):
// success, or the documented failure naming the failing rank, but never a hang or another code.
void expect_ok_or(const Status& st, const char* needle, const std::string& what) {
  if (st.ok()) {
    ++passed;
    return;
  }
  expect(st, HCOMM_ERR_INVALID_ARG, needle, what + " (finished or failed)");
}

// The path (Communicator::algorithm_for) an operation of `bytes` bytes takes must be `want`: a case
// about the slot board or the staged allreduce must run there.
void expect_route(const Communicator& c, const char* op, size_t bytes, const std::string& want,
                  const std::string& what) {
  const std::string got = c.algorithm_for(op, bytes);
  expect(got == want
             ? Status{}
             : Status{HCOMM_ERR_INTERNAL, std::string(op) + " of " + std::to_string(bytes) +
                                              " bytes runs '" + got + "', not '" + want + "'"},
         HCOMM_SUCCESS, nullptr, what);
}

// Prints the message a case produced, for the person reading the log.
void note(const std::string& what, const Status& st) {
  std::printf("  %s -> %s\n", what.c_str(), st.to_string().c_str());
}

constexpr auto kDeadline = std::chrono::seconds(20);

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

int alone() {
  Config base;
  base.connect_timeout = std::chrono::milliseconds(1500);
  {  // rank 1 of 2, nobody hosts the root
    Config c = base;
    c.rank = 1, c.world_size = 2;
    c.root_addr = "127.0.0.1:" + std::to_string(free_port());
    auto t0 = Clock::now();
    auto comm = Communicator::create(c);
    double sec = std::chrono::duration<double>(Clock::now() - t0).count();
    expect(comm.status(), HCOMM_ERR_TIMEOUT, "rendezvous", "unreachable root");
    expect(sec < 6 ? Status{} : Status{HCOMM_ERR_INTERNAL, std::to_string(sec) + " s"},
           HCOMM_SUCCESS, nullptr, "unreachable root fails within its deadline");
  }
  {  // rank 0 of 3: ranks 1 and 2 never come
    Config c = base;
    c.rank = 0, c.world_size = 3;
    c.root_addr = "127.0.0.1:" + std::to_string(free_port());
    auto comm = Communicator::create(c);
    expect(comm.status(), HCOMM_ERR_TIMEOUT, "rank(s) 1, 2 of 3 never arrived",
           "missing ranks are named");
  }
  {
    Config c = base;
    c.rank = 4, c.world_size = 2;
    expect(Communicator::create(c).status(), HCOMM_ERR_INVALID_ARG, "HCOMM_RANK",
           "rank out of range");
    c.rank = 0, c.world_size = -1;
    expect(Communicator::create(c).status(), HCOMM_ERR_INVALID_ARG, "HCOMM_WORLD_SIZE",
           "world size unset");
    c.world_size = 1, c.transport = "rdma";
    expect(Communicator::create(c).status(), HCOMM_ERR_NO_DEVICE, "HCOMM_TRANSPORT",
           "unavailable transport");
  }
  {  // bad algorithm choices, in code and through HCOMM_ALGO: refused before any connection
    Config c = base;
    c.rank = 0, c.world_size = 1;
    c.algo = "allreduce=bogus";
    expect(Communicator::create(c).status(), HCOMM_ERR_INVALID_ARG, "unknown algorithm 'bogus'",
           "Config::algo with an unknown algorithm");
    c.algo = "gather=ring";
    expect(Communicator::create(c).status(), HCOMM_ERR_INVALID_ARG,
           "gather has no 'ring' algorithm", "Config::algo with an unsupported algorithm");
    c.algo = "allreduce=ring;frobnicate=tree";
    expect(Communicator::create(c).status(), HCOMM_ERR_INVALID_ARG, "unknown operation",
           "Config::algo with an unknown operation");
    c.algo = "";
    c.chunk_bytes = 4;
    expect(Communicator::create(c).status(), HCOMM_ERR_INVALID_ARG, "chunk_bytes",
           "chunk_bytes below the minimum");
    setenv("HCOMM_ALGO", "allreduce=bogus", 1);
    expect(Config::from_env().status(), HCOMM_ERR_INVALID_ARG, "HCOMM_ALGO",
           "HCOMM_ALGO with an unknown algorithm");
    setenv("HCOMM_ALGO", "gather=ring", 1);
    expect(Config::from_env().status(), HCOMM_ERR_INVALID_ARG, "gather has no 'ring'",
           "HCOMM_ALGO with an unsupported algorithm");
    unsetenv("HCOMM_ALGO");
  }
  expect(Work().wait(std::chrono::milliseconds(1)), HCOMM_ERR_INVALID_ARG, nullptr,
         "wait on an empty Work");
  std::printf("bad input (alone): %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--alone") == 0) return alone();
  auto created = Communicator::create_from_env();
  if (!created) {
    std::fprintf(stderr, "create: %s\n", created.status().to_string().c_str());
    return 2;
  }
  Communicator& c = **created;
  const int rank = c.rank(), size = c.size();
  std::vector<float> a(1000, 1.0f), b(1000);

  // A null buffer on rank 1 only: rank 1 is told at once, the others learn it from rank 1.
  Status st = c.allreduce_async(rank == 1 ? nullptr : a.data(), b.data(), 100, DataType::float32,
                                ReduceOp::sum)
                  .wait(kDeadline);
  expect(st, HCOMM_ERR_INVALID_ARG, rank == 1 ? "null send buffer" : "rank 1", "null buffer");

  st = c.allreduce(a.data(), b.data(), 10, static_cast<DataType>(42), ReduceOp::sum);
  expect(st, HCOMM_ERR_INVALID_ARG, "data type", "invalid data type");
  st = c.allreduce(a.data(), b.data(), 10, DataType::float32, static_cast<ReduceOp>(9));
  expect(st, HCOMM_ERR_INVALID_ARG, "reduce op", "invalid reduce op");
  st = c.allreduce(a.data(), b.data(), 10, DataType::float32, ReduceOp::bxor);
  expect(st, HCOMM_ERR_INVALID_ARG, "integer types only", "bxor of float32");
  st = c.reduce_scatter(a.data(), b.data(), 1, DataType::bfloat16, ReduceOp::band);
  expect(st, HCOMM_ERR_INVALID_ARG, "integer types only", "band of bfloat16");
  st = c.broadcast(a.data(), 10, DataType::float32, size);
  expect(st, HCOMM_ERR_INVALID_ARG, "root", "root out of range");
  st = c.broadcast(a.data(), 10, DataType::float32, -1);
  expect(st, HCOMM_ERR_INVALID_ARG, "root", "negative root");

  // Counts that differ between ranks.
  st = c.allreduce_async(a.data(), b.data(), 100 * static_cast<size_t>(rank + 1), DataType::float32,
                         ReduceOp::sum)
           .wait(kDeadline);
  expect(st, HCOMM_ERR_INVALID_ARG, "same count", "allreduce count mismatch");
  st = c.allreduce_async(a.data(), b.data(), 10, rank == 0 ? DataType::int32 : DataType::float32,
                         ReduceOp::sum)
           .wait(kDeadline);
  expect(st, HCOMM_ERR_INVALID_ARG, nullptr, "allreduce data type mismatch");
  {
    // The same above the slot size (a one-host communicator's staged allreduce) and across it
    // (8 KiB on rank 0, a slot; 1 MiB on the others). A matching one must then still be right:
    // no rank may be left a step ahead in the staging rings.
    // Needs a one-host communicator (hcomm-run on one machine, HCOMM_TRANSPORT unset).
    constexpr size_t kBig = 1 << 19;  // 2 MiB of float32
    std::vector<float> big(kBig, 1.0f), total(kBig, -1.0f);
    const size_t mine = kBig / 4 * static_cast<size_t>(rank + 1);
    expect_route(c, "allreduce", mine * 4, "staged", "large allreduce count mismatch: route");
    st = c.allreduce_async(big.data(), total.data(), mine, DataType::float32, ReduceOp::sum)
             .wait(kDeadline);
    expect(st, HCOMM_ERR_INVALID_ARG, "same count", "large allreduce count mismatch");
    const size_t across = rank == 0 ? 2048 : kBig / 2;
    expect_route(c, "allreduce", across * 4, rank == 0 ? "slot" : "staged",
                 "allreduce count mismatch across 16 KiB: route");
    st = c.allreduce_async(big.data(), total.data(), across, DataType::float32, ReduceOp::sum)
             .wait(kDeadline);
    expect(st, HCOMM_ERR_INVALID_ARG, "same count", "allreduce count mismatch across 16 KiB");
    expect_route(c, "allreduce", kBig * 4, "staged", "large allreduce after the mismatches: route");
    for (size_t i = 0; i < kBig; ++i) big[i] = static_cast<float>((i % 1000) * (rank + 1));
    st = c.allreduce(big.data(), total.data(), kBig, DataType::float32, ReduceOp::sum);
    size_t wrong = 0;
    for (size_t i = 0; i < kBig; ++i)
      wrong += !matches(summed(size, [&](int r) { return (i % 1000) * (r + 1.0); }), total[i]);
    expect(
        st.ok() && wrong == 0 ? st : Status{HCOMM_ERR_INTERNAL, std::to_string(wrong) + " wrong"},
        HCOMM_SUCCESS, nullptr, "large allreduce after the mismatches");
  }

  // Point-to-point errors.
  expect(c.send(a.data(), 10, DataType::float32, size, 0), HCOMM_ERR_INVALID_ARG, "peer",
         "send to a peer out of range");
  expect(c.recv(a.data(), 10, DataType::float32, rank, 0), HCOMM_ERR_INVALID_ARG, "this rank",
         "recv from itself");
  expect(c.send(a.data(), 10, DataType::float32, (rank + 1) % size, -3), HCOMM_ERR_INVALID_ARG,
         "tag", "negative tag");
  if (rank == 0) {
    // As with MPI, a send completes once its bytes are handed to the transport: the mismatch
    // is the receiver's to report.
    st = c.send_async(a.data(), 10, DataType::float32, 1, 5).wait(kDeadline);
    expect(st, HCOMM_SUCCESS, nullptr, "send size mismatch (sender)");
  } else if (rank == 1) {
    st = c.recv_async(b.data(), 20, DataType::float32, 0, 5).wait(kDeadline);
    expect(st, HCOMM_ERR_INVALID_ARG, "bytes", "recv size mismatch (receiver)");
  }

  // A rejected send fails its receiver's matching receive, and nothing else: the same tag the
  // other way, afterwards, still carries its message.
  if (rank <= 1 && size >= 2) {
    std::vector<float> sent(10, 2.5f + static_cast<float>(rank)), got(10, 0.0f);
    if (rank == 0) {
      expect(c.send(nullptr, 10, DataType::float32, 1, 7), HCOMM_ERR_INVALID_ARG, "null",
             "a rejected send (sender)");
      st = c.recv(got.data(), 10, DataType::float32, 1, 7);
    } else {
      expect(c.recv(got.data(), 10, DataType::float32, 0, 7), HCOMM_ERR_INVALID_ARG, "rank 0",
             "the rejected send's receive (receiver)");
      st = c.send(sent.data(), 10, DataType::float32, 0, 7);
    }
    const bool right = rank == 1 || got == std::vector<float>(10, 3.5f);
    expect(st.ok() && !right ? Status{HCOMM_ERR_INTERNAL, "wrong elements"} : st, HCOMM_SUCCESS,
           nullptr, "the same tag the other way after a rejected send");
  }

  // A receive nobody sends: the deadline is honoured and the operation stays in flight.
  if (rank == 0) {
    Work w = c.recv_async(b.data(), 10, DataType::float32, 1, 99);
    auto t0 = Clock::now();
    expect(w.wait(std::chrono::milliseconds(200)), HCOMM_ERR_TIMEOUT, "did not complete",
           "wait deadline");
    double sec = std::chrono::duration<double>(Clock::now() - t0).count();
    expect(sec < 2 && !w.test() ? Status{} : Status{HCOMM_ERR_INTERNAL, "late or completed"},
           HCOMM_SUCCESS, nullptr, "wait returns at its deadline");
  }

  // ---- bad algorithm choices on every rank: creation fails before it meets the other ranks.
  {
    auto cfg = Config::from_env();
    Config bad = cfg.ok() ? cfg.value() : Config{};
    bad.algo = "allreduce=bogus";
    st = Communicator::create(bad).status();
    expect(st, HCOMM_ERR_INVALID_ARG, "unknown algorithm 'bogus'", "create with allreduce=bogus");
    if (rank == 0) note("create with algo allreduce=bogus", st);
    bad.algo = "gather=ring";
    st = Communicator::create(bad).status();
    expect(st, HCOMM_ERR_INVALID_ARG, "gather has no 'ring' algorithm", "create with gather=ring");
    if (rank == 0) note("create with algo gather=ring", st);
  }

  const size_t n = static_cast<size_t>(size);
  std::vector<float> g(10 * n, 0.0f);  // a gather/scatter buffer of size() blocks of 10
  auto wait = [&](Work w) { return w.wait(kDeadline); };

  // ---- rooted collectives with a root out of range on every rank: each is told at once.
  for (int bad_root : {size, -1}) {
    std::string r = " (root " + std::to_string(bad_root) + ")";
    expect(c.reduce(a.data(), b.data(), 10, DataType::float32, ReduceOp::sum, bad_root),
           HCOMM_ERR_INVALID_ARG, "root", "reduce root out of range" + r);
    expect(c.gather(a.data(), g.data(), 10, DataType::float32, bad_root), HCOMM_ERR_INVALID_ARG,
           "root", "gather root out of range" + r);
    expect(c.scatter(g.data(), b.data(), 10, DataType::float32, bad_root), HCOMM_ERR_INVALID_ARG,
           "root", "scatter root out of range" + r);
  }

  // ---- a root out of range on rank 1 only: rank 1 is told at once; the root (0) needs rank 1's
  // data for reduce and gather, so it must fail naming rank 1; the other ranks finish or fail so.
  {
    const int root = rank == 1 ? size : 0;
    st = wait(c.reduce_async(a.data(), b.data(), 10, DataType::float32, ReduceOp::max, root));
    if (rank == 1)
      expect(st, HCOMM_ERR_INVALID_ARG, "out of range", "reduce, rank 1's root out of range");
    else if (rank == 0)
      expect(st, HCOMM_ERR_INVALID_ARG, "rank 1", "reduce, rank 1's root out of range (root)");
    else
      expect_ok_or(st, "rank 1", "reduce, rank 1's root out of range (others)");
    if (rank <= 1) note("reduce, root out of range on rank 1", st);

    st = wait(c.gather_async(a.data(), g.data(), 10, DataType::float32, root));
    if (rank == 1)
      expect(st, HCOMM_ERR_INVALID_ARG, "out of range", "gather, rank 1's root out of range");
    else if (rank == 0)
      expect(st, HCOMM_ERR_INVALID_ARG, "rank 1", "gather, rank 1's root out of range (root)");
    else
      expect_ok_or(st, "rank 1", "gather, rank 1's root out of range (others)");

    // Scatter: the other ranks wait for the root's block, which it does send; the root only
    // sends. Everyone but rank 1 may finish.
    st = wait(c.scatter_async(g.data(), b.data(), 10, DataType::float32, root));
    if (rank == 1)
      expect(st, HCOMM_ERR_INVALID_ARG, "out of range", "scatter, rank 1's root out of range");
    else
      expect_ok_or(st, "rank 1", "scatter, rank 1's root out of range (others)");
  }

  // ---- V forms with count vectors of the wrong length on rank 1 only. Every rank needs rank
  // 1's block, so every rank fails: rank 1 at once, the others naming rank 1.
  {
    std::vector<size_t> counts(n, 10), displs(n);
    for (size_t i = 0; i < n; ++i) displs[i] = 10 * i;
    std::vector<size_t> long_counts(n + 1, 10), short_displs(n - 1, 0);
    st = wait(c.allgatherv_async(a.data(), g.data(), rank == 1 ? long_counts : counts, displs,
                                 DataType::float32));
    expect(st, HCOMM_ERR_INVALID_ARG, rank == 1 ? "entries" : "rank 1",
           "allgatherv with a count vector of the wrong length on rank 1");
    if (rank <= 1) note("allgatherv, " + std::to_string(n + 1) + " counts on rank 1", st);

    std::vector<float> out(10 * n);
    st = wait(c.alltoallv_async(g.data(), counts, rank == 1 ? short_displs : displs, out.data(),
                                counts, displs, DataType::float32));
    expect(st, HCOMM_ERR_INVALID_ARG, rank == 1 ? "entries" : "rank 1",
           "alltoallv with a displacement vector of the wrong length on rank 1");
    if (rank <= 1) note("alltoallv, " + std::to_string(n - 1) + " send displs on rank 1", st);

    // Rank 0 sends 12 elements to rank 1, which expects 10 from rank 0: valid on each rank
    // alone, a length mismatch the receiver (rank 1) detects. The others finish or learn of it.
    std::vector<size_t> sc = counts, rc = counts, sd = displs, rd = displs;
    std::vector<float> big(12 * n, 1.0f);
    if (rank == 0) {
      sc[1] = 12;
      for (size_t i = 0; i < n; ++i) sd[i] = 12 * i;
    }
    st = wait(c.alltoallv_async(big.data(), sc, sd, out.data(), rc, rd, DataType::float32));
    if (rank == 1) {
      // The message must name the sender and the sizes that disagree (12 floats = 48 bytes
      // arrived where 10 = 40 were expected), not only that something differs.
      expect(st, HCOMM_ERR_INVALID_ARG, "rank 0", "alltoallv length mismatch (receiver)");
      const std::string& m = st.message();
      bool sizes = (m.find("48") != std::string::npos && m.find("40") != std::string::npos) ||
                   (m.find("12") != std::string::npos && m.find("10") != std::string::npos);
      expect(sizes ? Status{} : Status{HCOMM_ERR_INTERNAL, "message without both sizes: " + m},
             HCOMM_SUCCESS, nullptr, "alltoallv length mismatch names both lengths");
    } else
      expect_ok_or(st, "rank 1", "alltoallv length mismatch (others)");
    if (rank <= 1) note("alltoallv, rank 0 sends 12 where rank 1 expects 10", st);
  }

  // ---- null buffers: the root's gather recv, reduce recv and scatter send are required; the
  // other ranks' are not.
  {
    st = wait(c.gather_async(a.data(), rank == 0 ? nullptr : g.data(), 10, DataType::float32, 0));
    if (rank == 0)
      expect(st, HCOMM_ERR_INVALID_ARG, "null", "gather, null recv on the root");
    else
      expect_ok_or(st, "rank 0", "gather, null recv on the root (others)");
    if (rank == 0) note("gather, null recv on the root", st);

    st = wait(c.reduce_async(a.data(), nullptr, 10, DataType::float32, ReduceOp::sum, 0));
    if (rank == 0)
      expect(st, HCOMM_ERR_INVALID_ARG, "null", "reduce, null recv on the root");
    else
      expect_ok_or(st, "rank 0", "reduce, null recv on the root (others)");

    // Everyone waits for the root's block: all fail.
    st = wait(c.scatter_async(nullptr, b.data(), 10, DataType::float32, 0));
    expect(st, HCOMM_ERR_INVALID_ARG, rank == 0 ? "null" : "rank 0",
           "scatter, null send on the root");

    // Null where it is allowed: the non-roots' gather recv, reduce recv and scatter send.
    std::vector<float> mine(10, static_cast<float>(rank + 1)), all(10 * n, -1.0f), red(10, -1.0f);
    st = c.gather(mine.data(), rank == 0 ? all.data() : nullptr, 10, DataType::float32, 0);
    bool right = st.ok();
    for (size_t i = 0; rank == 0 && right && i < all.size(); ++i)
      right = all[i] == static_cast<float>(i / 10 + 1);
    expect(right ? Status{} : Status{HCOMM_ERR_INTERNAL, "wrong result: " + st.to_string()},
           HCOMM_SUCCESS, nullptr, "gather with null recv on the non-roots");
    st = c.reduce(mine.data(), rank == 0 ? red.data() : nullptr, 10, DataType::float32,
                  ReduceOp::sum, 0);
    right = st.ok();
    for (size_t i = 0; rank == 0 && right && i < red.size(); ++i)
      right = matches(summed(size, [](int r) { return r + 1.0; }), red[i]);
    expect(right ? Status{} : Status{HCOMM_ERR_INTERNAL, "wrong result: " + st.to_string()},
           HCOMM_SUCCESS, nullptr, "reduce with null recv on the non-roots");
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<float>(i);
    st = c.scatter(rank == 0 ? all.data() : nullptr, red.data(), 10, DataType::float32, 0);
    right = st.ok();
    for (size_t i = 0; right && i < red.size(); ++i)
      right = red[i] == static_cast<float>(10 * static_cast<size_t>(rank) + i);
    expect(right ? Status{} : Status{HCOMM_ERR_INTERNAL, "wrong result: " + st.to_string()},
           HCOMM_SUCCESS, nullptr, "scatter with null send on the non-roots");
  }

  // ---- mismatched collectives: rank 0 calls gather (root 1) while the others call scatter
  // (root 0). Rank 1 receives a gather frame where it expects a scatter one and fails naming
  // the mismatch; ranks >= 2 wait for a scatter block rank 0 never sends and learn of rank 1's
  // failure; rank 0 only sends, so it finishes or fails.
  {
    if (rank == 0)
      st = wait(c.gather_async(a.data(), nullptr, 10, DataType::float32, 1));
    else
      st = wait(c.scatter_async(nullptr, b.data(), 10, DataType::float32, 0));
    if (rank == 0)
      expect_ok_or(st, "rank 1", "gather vs scatter (rank 0, gather)");
    else if (rank == 1)
      expect(st, HCOMM_ERR_INVALID_ARG, "called gather", "gather vs scatter (rank 1, scatter)");
    else
      expect(st, HCOMM_ERR_INVALID_ARG, "rank 1", "gather vs scatter (other ranks, scatter)");
    if (rank <= 1) note("rank 0 gather, rank 1 scatter", st);
  }

  // The communicator still works, and the result is right.
  st = c.allreduce(a.data(), b.data(), 1000, DataType::float32, ReduceOp::sum);
  bool right = st.ok();
  for (float v : b) right &= matches(summed(size, [](int) { return 1.0; }), v);
  expect(right ? Status{} : Status{HCOMM_ERR_INTERNAL, "wrong result: " + st.to_string()},
         HCOMM_SUCCESS, nullptr, "allreduce after errors");
  expect(c.barrier(), HCOMM_SUCCESS, nullptr, "barrier after errors");

  std::printf("bad input: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
