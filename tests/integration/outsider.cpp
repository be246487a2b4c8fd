// A live job attacked the way an outsider on the same network would (tests/integration/
// outsider.sh drives both):
//   outsider job DIR           one rank of the job (under hcomm-run, which gives it the job's
//                              key): writes DIR/rank<r> ("pid root_addr"), then runs allreduce
//                              and broadcast back to back until DIR/stop exists (at most 150 s),
//                              every result compared with its expected value; prints
//                              "job: rank R: N operations, W wrong".
//   outsider attack STORE_PORT RANK0_PID PORT...
//                              without the key, then with a wrong one: joins the rendezvous,
//                              reads and writes keys, forges a data-link hello on every PORT,
//                              floods the store with 1 GiB of junk; each attempt must be refused.
//                              Prints "outsider: P refused, F got in" and rank 0's RSS growth.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <hcomm/hcomm.hpp>

#include "bootstrap/store_client.hpp"
#include "bootstrap/store_server.hpp"
#include "core/auth_handshake.hpp"
#include "tests/integration/checks.hpp"
#include "transport/tcp/tcp_socket.hpp"

using namespace hcomm;
using namespace std::chrono_literals;
using checks::check;
using Clock = std::chrono::steady_clock;

namespace {

// ---- the job

int run_job(const std::string& dir) {
  auto made = Communicator::create_from_env();
  if (!made) {
    std::fprintf(stderr, "create: %s\n", made.status().to_string().c_str());
    return 2;
  }
  Communicator& c = **made;
  {
    const char* root = std::getenv("HCOMM_ROOT_ADDR");
    std::ofstream(dir + "/rank" + std::to_string(c.rank()))
        << getpid() << " " << (root ? root : "") << "\n";
  }
  constexpr size_t kCount = 256 * 1024;  // 1 MiB of int32
  const int n = c.size(), me = c.rank();
  std::vector<int32_t> buf(kCount);
  long ops = 0, wrong = 0;
  const auto end = Clock::now() + 150s;
  const std::string stop_file = dir + "/stop";
  for (int32_t iter = 0;; ++iter) {
    for (size_t i = 0; i < kCount; ++i) buf[i] = (me + 1) * (iter + static_cast<int32_t>(i % 977));
    if (!c.allreduce(buf.data(), buf.data(), kCount, DataType::int32, ReduceOp::sum).ok()) ++wrong;
    const int32_t ranks_sum = n * (n + 1) / 2;
    for (size_t i = 0; i < kCount; ++i)
      if (buf[i] != ranks_sum * (iter + static_cast<int32_t>(i % 977))) {
        ++wrong;
        break;
      }
    const int root = iter % n;
    for (size_t i = 0; i < kCount; ++i) buf[i] = me == root ? iter * 31 + static_cast<int>(i) : -1;
    if (!c.broadcast(buf.data(), kCount, DataType::int32, root).ok()) ++wrong;
    for (size_t i = 0; i < kCount; ++i)
      if (buf[i] != iter * 31 + static_cast<int>(i)) {
        ++wrong;
        break;
      }
    ops += 2;
    // Every rank stops at the same iteration: rank 0's clock decides.
    int32_t stop = me == 0 && (Clock::now() >= end || access(stop_file.c_str(), F_OK) == 0) ? 1 : 0;
    if (!c.broadcast(&stop, 1, DataType::int32, 0).ok()) ++wrong;
    if (stop) break;
  }
  std::printf("job: rank %d: %ld operations, %ld wrong\n", me, ops, wrong);
  return wrong == 0 ? 0 : 1;
}

// ---- the outsider

int connect_to(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/// Everything the peer sends until it closes (or 3 s pass: then `*closed` is false).
std::string read_until_closed(int fd, bool* closed) {
  std::string got;
  const auto end = Clock::now() + 3s;
  *closed = false;
  while (Clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      *closed = true;
      break;
    }
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

/// Sends `bytes`, then expects the peer to close having sent nothing but (at most) its
/// handshake greeting: nothing it received was acted on.
void expect_refused(uint16_t port, const std::string& bytes, const std::string& what) {
  int fd = connect_to(port);
  if (fd < 0) return check(false, what + ": cannot connect");
  (void)send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  bool closed = false;
  const std::string got = read_until_closed(fd, &closed);
  close(fd);
  const bool only_greeting =
      got.empty() ||
      (got.size() == core::AuthHandshake::kGreetingBytes &&
       core::AuthHandshake::is_greeting(reinterpret_cast<const uint8_t*>(got.data())));
  check(closed && only_greeting, what + " (got " + std::to_string(got.size()) + " bytes, " +
                                     (closed ? "closed" : "still open") + ")");
}

std::string store_frame(bootstrap::store_wire::FrameWriter w) {
  return w.take();
}

/// A wrong key's handshake: a greeting, then (once the listener greets back) a proof under the
/// wrong key. The listener must close without proving anything.
void wrong_key_handshake(uint16_t port, const std::string& what) {
  auto key = core::JobKey::from_secret("an outsider's guess at the key");
  int fd = connect_to(port);
  if (fd < 0) return check(false, what + ": cannot connect");
  core::AuthHandshake auth(key.value(), core::AuthHandshake::Role::connector);
  (void)send(fd, auth.output().data(), auth.output().size(), MSG_NOSIGNAL);
  auth.output().clear();
  bool closed = false;
  std::string got;
  const auto end = Clock::now() + 3s;
  while (Clock::now() < end && !closed) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    uint8_t buf[64];
    ssize_t n = recv(fd, buf, std::max<size_t>(1, std::min(sizeof(buf), auth.wanted())), 0);
    if (n <= 0) {
      closed = true;
      break;
    }
    got.append(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
    auth.feed(buf, static_cast<size_t>(n));
    if (!auth.output().empty()) {
      (void)send(fd, auth.output().data(), auth.output().size(), MSG_NOSIGNAL);
      auth.output().clear();
    }
  }
  close(fd);
  check(closed && !auth.done() && got.size() <= core::AuthHandshake::kGreetingBytes,
        what + " (got " + std::to_string(got.size()) + " bytes)");
}

long rss_kib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

/// 1 GiB of junk at the store, over as many connections as it takes (each is closed at its first
/// bytes); half of them start with a well-formed greeting.
void flood(uint16_t port, size_t total) {
  std::string junk(1 << 20, '\0');
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>((i * 2654435761u) >> 13);
  core::AuthHandshake greeter(core::JobKey::from_secret("an outsider's guess at the key").value(),
                              core::AuthHandshake::Role::connector);
  size_t sent = 0;
  int connections = 0;
  const auto end = Clock::now() + 90s;
  while (sent < total && Clock::now() < end) {
    int fd = connect_to(port);
    if (fd < 0) continue;
    ++connections;
    if (connections % 2 == 0) (void)send(fd, greeter.output().data(), 40, MSG_NOSIGNAL);
    for (;;) {
      ssize_t n = send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
      if (sent >= total) break;
    }
    close(fd);
  }
  std::printf("outsider: flooded the store with %zu MiB over %d connections\n", sent >> 20,
              connections);
  check(sent >= total, "the flood sent its 1 GiB");
}

int run_attack(uint16_t store_port, int rank0_pid, const std::vector<uint16_t>& ports) {
  namespace wire = bootstrap::store_wire;
  // The rendezvous store, without a key: a store client, then raw requests.
  auto none = bootstrap::StoreClient::connect("127.0.0.1", store_port, 3000ms);
  check(!none.ok(), "a store client without the key is refused");
  if (!none.ok()) std::printf("outsider: without a key: %s\n", none.status().message().c_str());
  auto wrong = bootstrap::StoreClient::connect(
      "127.0.0.1", store_port, 3000ms,
      core::JobKey::from_secret("an outsider's guess at the key").value());
  check(!wrong.ok(), "a store client with a wrong key is refused");
  if (!wrong.ok()) std::printf("outsider: wrong key: %s\n", wrong.status().message().c_str());
  const std::string hello =
      store_frame(wire::FrameWriter().u8(wire::kHello).u32(wire::kMagic).u32(wire::kVersion));
  expect_refused(store_port,
                 hello + store_frame(wire::FrameWriter().u8(wire::kGet).u32(0).str("comm/1/uid")),
                 "store: HELLO then GET of the communicator's id");
  expect_refused(
      store_port,
      hello +
          store_frame(wire::FrameWriter().u8(wire::kSet).str("comm/1/addr/1").str("127.0.0.1:1")),
      "store: HELLO then SET of a rank's address");
  expect_refused(
      store_port,
      hello + store_frame(wire::FrameWriter().u8(wire::kAdd).str("comm/1/claims/1").u64(1)),
      "store: HELLO then a rank claim (joining)");
  wrong_key_handshake(store_port, "store: a wrong key's handshake");

  // Every data and fallback listener of the job: a forged hello, a wrong key's handshake.
  for (uint16_t port : ports) {
    transport::tcp::Hello forged;
    forged.comm_uid = 0x1234567890abcdefull;
    forged.rank = 1;
    forged.num_streams = 1;
    forged.world_size = 2;
    expect_refused(port, std::string(reinterpret_cast<const char*>(&forged), sizeof(forged)),
                   "listener :" + std::to_string(port) + ": a forged hello");
    wrong_key_handshake(port, "listener :" + std::to_string(port) + ": a wrong key's handshake");
  }

  const long before = rss_kib(rank0_pid);
  flood(store_port, size_t{1} << 30);
  std::this_thread::sleep_for(500ms);
  const long after = rss_kib(rank0_pid);
  std::printf("outsider: rank 0's RSS %ld KiB before the flood, %ld KiB after (+%ld KiB)\n", before,
              after, after - before);
  check(before > 0 && after - before < 16 * 1024, "rank 0 grew by less than 16 MiB");
  std::printf("outsider: %d refused, %d got in\n", checks::passed, checks::failed);
  return checks::failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "job" && argc == 3) return run_job(argv[2]);
  if (mode == "attack" && argc >= 4) {
    std::vector<uint16_t> ports;
    for (int i = 4; i < argc; ++i) ports.push_back(static_cast<uint16_t>(std::atoi(argv[i])));
    return run_attack(static_cast<uint16_t>(std::atoi(argv[2])), std::atoi(argv[3]), ports);
  }
  std::fprintf(stderr, "usage: outsider job DIR | outsider attack STORE_PORT RANK0_PID PORT...\n");
  return 2;
}
