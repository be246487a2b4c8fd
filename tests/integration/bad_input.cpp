// Bad input gets the documented status and a message, never a crash or a hang; the communicator
// stays usable afterwards. Under hcomm-run -n N (N >= 2), or alone with --alone for the
// creation errors (unreachable root, ranks that never arrive, bad configuration).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <hcomm/hcomm.hpp>

using namespace hcomm;
using Clock = std::chrono::steady_clock;

namespace {

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
  expect(st, HCOMM_ERR_INVALID_ARG, rank == 1 ? "null buffer" : "rank 1", "null buffer");

  st = c.allreduce(a.data(), b.data(), 10, static_cast<DataType>(42), ReduceOp::sum);
  expect(st, HCOMM_ERR_INVALID_ARG, "data type", "invalid data type");
  st = c.allreduce(a.data(), b.data(), 10, DataType::float32, static_cast<ReduceOp>(9));
  expect(st, HCOMM_ERR_INVALID_ARG, "reduce op", "invalid reduce op");
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

  // The communicator still works, and the result is right.
  st = c.allreduce(a.data(), b.data(), 1000, DataType::float32, ReduceOp::sum);
  bool right = st.ok();
  for (float v : b) right &= v == static_cast<float>(size);
  expect(right ? Status{} : Status{HCOMM_ERR_INTERNAL, "wrong result: " + st.to_string()},
         HCOMM_SUCCESS, nullptr, "allreduce after errors");
  expect(c.barrier(), HCOMM_SUCCESS, nullptr, "barrier after errors");

  std::printf("bad input: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
