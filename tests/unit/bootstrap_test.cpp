// Bootstrap: launcher environment, configuration from the environment, local addresses, and the
// rendezvous store (many clients, parked GET/WAIT, timeouts, a root that starts late or goes away).
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/interface_address.hpp"
#include "bootstrap/launch_env.hpp"
#include "bootstrap/store_client.hpp"
#include "bootstrap/store_server.hpp"
#include "hcomm/config.hpp"
#include "tests/unit/raw_socket.hpp"

using namespace hcomm;             // NOLINT
using namespace hcomm::bootstrap;  // NOLINT
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

/// Every variable that read_launch_env() and Config::from_env() look at.
const char* const kEnvVars[] = {
    "HCOMM_RANK",
    "HCOMM_WORLD_SIZE",
    "HCOMM_ROOT_ADDR",
    "RANK",
    "WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "HCOMM_SOCKET_IFNAME",
    "HCOMM_TRANSPORT",
    "HCOMM_SEND_BUF_SIZE",
    "HCOMM_RECV_BUF_SIZE",
    "HCOMM_SOCKETS_PER_PEER",
    "HCOMM_CHUNK_SIZE",
    "HCOMM_CONNECT_TIMEOUT_MS",
    "HCOMM_TIMEOUT_MS",
    "HCOMM_ACTOR_THREADS",
};

/// Clears every launcher/config variable for the test's lifetime and restores them afterwards.
class CleanEnv {
 public:
  CleanEnv() {
    for (const char* name : kEnvVars) {
      const char* v = std::getenv(name);
      if (v != nullptr) saved_[name] = v;
      unsetenv(name);
    }
  }
  ~CleanEnv() {
    for (const char* name : kEnvVars) {
      auto it = saved_.find(name);
      if (it == saved_.end()) {
        unsetenv(name);
      } else {
        setenv(name, it->second.c_str(), 1);
      }
    }
  }
  void set(const char* name, const char* value) { setenv(name, value, 1); }

 private:
  std::map<std::string, std::string> saved_;
};

long ms_since(Clock::time_point t0) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// A socket bound to 127.0.0.1 on an ephemeral port and not listening: connecting to that port is
/// refused for as long as the socket lives, and no client can be given it as its own port.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    socklen_t len = sizeof(sa);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
  }
  ~RefusingPort() {
    if (fd_ >= 0) close(fd_);
  }
  uint16_t port() const { return port_; }
  /// Frees the port (for a server that starts on it later).
  void release() {
    close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

std::unique_ptr<StoreServer> start_server() {
  auto server = StoreServer::start("127.0.0.1", 0);
  REQUIRE_MESSAGE(server.ok(), server.status().message());
  return std::move(*server);
}

std::unique_ptr<StoreClient> connect_client(uint16_t port) {
  auto client = StoreClient::connect("127.0.0.1", port, 5000ms);
  REQUIRE_MESSAGE(client.ok(), client.status().message());
  return std::move(*client);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Launcher environment

TEST_CASE("read_launch_env finds nothing in a clean environment, which is not an error") {
  CleanEnv env;
  auto e = read_launch_env();
  REQUIRE(e.ok());
  CHECK(e->rank == -1);
  CHECK(e->world_size == -1);
  CHECK(e->root_addr.empty());
  CHECK(e->source.empty());
}

TEST_CASE("HCOMM variables take precedence over every launcher") {
  CleanEnv env;
  env.set("HCOMM_RANK", "1");
  env.set("HCOMM_WORLD_SIZE", "4");
  env.set("HCOMM_ROOT_ADDR", "10.0.0.1:1234");
  env.set("RANK", "2");
  env.set("WORLD_SIZE", "8");
  env.set("MASTER_ADDR", "node9");
  env.set("MASTER_PORT", "29501");
  env.set("OMPI_COMM_WORLD_RANK", "3");
  env.set("OMPI_COMM_WORLD_SIZE", "16");
  env.set("SLURM_PROCID", "5");
  env.set("SLURM_NTASKS", "32");
  auto e = read_launch_env();
  REQUIRE_MESSAGE(e.ok(), e.status().message());
  CHECK(e->rank == 1);
  CHECK(e->world_size == 4);
  CHECK(e->root_addr == "10.0.0.1:1234");
  CHECK(e->source == "HCOMM");
}

TEST_CASE("torchrun variables come before Open MPI and Slurm, with MASTER_ADDR:MASTER_PORT") {
  CleanEnv env;
  env.set("RANK", "2");
  env.set("WORLD_SIZE", "8");
  env.set("MASTER_ADDR", "node9");
  env.set("MASTER_PORT", "29501");
  env.set("OMPI_COMM_WORLD_RANK", "3");
  env.set("OMPI_COMM_WORLD_SIZE", "16");
  env.set("SLURM_PROCID", "5");
  env.set("SLURM_NTASKS", "32");
  auto e = read_launch_env();
  REQUIRE_MESSAGE(e.ok(), e.status().message());
  CHECK(e->rank == 2);
  CHECK(e->world_size == 8);
  CHECK(e->root_addr == "node9:29501");
  CHECK(e->source == "torchrun");
}

TEST_CASE("Open MPI variables come before Slurm") {
  CleanEnv env;
  env.set("OMPI_COMM_WORLD_RANK", "3");
  env.set("OMPI_COMM_WORLD_SIZE", "16");
  env.set("SLURM_PROCID", "5");
  env.set("SLURM_NTASKS", "32");
  auto e = read_launch_env();
  REQUIRE_MESSAGE(e.ok(), e.status().message());
  CHECK(e->rank == 3);
  CHECK(e->world_size == 16);
  CHECK(e->source == "Open MPI");
  CHECK(e->root_addr.empty());
}

TEST_CASE("Slurm variables are used last, with SLURM_NPROCS standing in for SLURM_NTASKS") {
  CleanEnv env;
  env.set("SLURM_PROCID", "5");
  env.set("SLURM_NTASKS", "32");
  auto e = read_launch_env();
  REQUIRE_MESSAGE(e.ok(), e.status().message());
  CHECK(e->rank == 5);
  CHECK(e->world_size == 32);
  CHECK(e->source == "Slurm");

  unsetenv("SLURM_NTASKS");
  env.set("SLURM_NPROCS", "6");
  e = read_launch_env();
  REQUIRE_MESSAGE(e.ok(), e.status().message());
  CHECK(e->world_size == 6);
}

TEST_CASE("the root address comes from HCOMM_ROOT_ADDR or MASTER_* whoever gave the rank") {
  CleanEnv env;
  env.set("SLURM_PROCID", "0");
  env.set("SLURM_NTASKS", "2");
  env.set("MASTER_ADDR", "10.1.1.1");
  env.set("MASTER_PORT", "4000");
  auto e = read_launch_env();
  REQUIRE_MESSAGE(e.ok(), e.status().message());
  CHECK(e->source == "Slurm");
  CHECK(e->root_addr == "10.1.1.1:4000");

  env.set("HCOMM_ROOT_ADDR", "10.2.2.2:5000");
  e = read_launch_env();
  REQUIRE_MESSAGE(e.ok(), e.status().message());
  CHECK(e->root_addr == "10.2.2.2:5000");
}

TEST_CASE("variables set to the empty string count as unset") {
  CleanEnv env;
  env.set("HCOMM_RANK", "");
  env.set("HCOMM_WORLD_SIZE", "");
  env.set("HCOMM_ROOT_ADDR", "");
  env.set("RANK", "0");
  env.set("WORLD_SIZE", "1");
  auto e = read_launch_env();
  REQUIRE_MESSAGE(e.ok(), e.status().message());
  CHECK(e->source == "torchrun");
  CHECK(e->root_addr.empty());
}

TEST_CASE("malformed launcher variables fail with INVALID_ARG naming the variable and value") {
  CleanEnv env;
  struct Case {
    std::vector<std::pair<const char*, const char*>> vars;
    std::vector<std::string> expect_in_message;
  };
  const Case cases[] = {
      {{{"HCOMM_RANK", "abc"}, {"HCOMM_WORLD_SIZE", "4"}}, {"HCOMM_RANK", "abc"}},
      {{{"HCOMM_RANK", "1"}, {"HCOMM_WORLD_SIZE", "4x"}}, {"HCOMM_WORLD_SIZE", "4x"}},
      {{{"RANK", "-1"}, {"WORLD_SIZE", "4"}}, {"RANK", "-1"}},
      {{{"RANK", "4"}, {"WORLD_SIZE", "4"}}, {"RANK=4", "WORLD_SIZE=4", "0..3"}},
      {{{"RANK", "0"}, {"WORLD_SIZE", "0"}}, {"WORLD_SIZE", "'0'"}},
      {{{"OMPI_COMM_WORLD_RANK", "99999999999"}, {"OMPI_COMM_WORLD_SIZE", "4"}},
       {"OMPI_COMM_WORLD_RANK", "99999999999"}},
      {{{"HCOMM_RANK", "1"}}, {"HCOMM_RANK", "HCOMM_WORLD_SIZE"}},
      {{{"SLURM_NTASKS", "4"}}, {"SLURM_NTASKS", "SLURM_PROCID"}},
      {{{"MASTER_ADDR", "node1"}, {"MASTER_PORT", "70000"}}, {"MASTER_PORT", "70000"}},
      {{{"MASTER_ADDR", "node1"}, {"MASTER_PORT", "http"}}, {"MASTER_PORT", "http"}},
      {{{"MASTER_ADDR", "node1"}}, {"MASTER_ADDR", "MASTER_PORT"}},
      {{{"MASTER_PORT", "29500"}}, {"MASTER_ADDR", "MASTER_PORT"}},
      {{{"HCOMM_ROOT_ADDR", "node1"}}, {"HCOMM_ROOT_ADDR", "node1", "port"}},
      {{{"HCOMM_ROOT_ADDR", "[::1]:29500"}}, {"HCOMM_ROOT_ADDR", "IPv6"}},
  };
  for (const auto& c : cases) {
    CleanEnv inner;
    std::string shown;
    for (const auto& [name, value] : c.vars) {
      inner.set(name, value);
      shown += std::string(name) + "=" + value + " ";
    }
    CAPTURE(shown);
    auto e = read_launch_env();
    REQUIRE_FALSE(e.ok());
    CHECK(e.status().code() == HCOMM_ERR_INVALID_ARG);
    for (const auto& part : c.expect_in_message) {
      CHECK_MESSAGE(contains(e.status().message(), part), e.status().message());
    }
  }
}

TEST_CASE("rank_variables() and world_size_variables() name the families in their order") {
  CHECK(rank_variables() == "HCOMM_RANK (or RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID)");
  CHECK(world_size_variables() ==
        "HCOMM_WORLD_SIZE (or WORLD_SIZE, OMPI_COMM_WORLD_SIZE, SLURM_NTASKS)");
}

TEST_CASE("what launch_variables() tells a rank, read_launch_env() reads back first") {
  CleanEnv env;
  env.set("RANK", "3");  // another family's, and MASTER_*: hcomm's own variables win
  env.set("WORLD_SIZE", "16");
  env.set("MASTER_ADDR", "node9");
  env.set("MASTER_PORT", "29500");
  const std::vector<std::string> vars = launch_variables(LaunchPlace{2, 5, 1, 3, "127.0.0.1:4242"});
  CHECK(vars == std::vector<std::string>{"HCOMM_RANK=2", "HCOMM_WORLD_SIZE=5", "HCOMM_LOCAL_RANK=1",
                                         "HCOMM_LOCAL_SIZE=3", "HCOMM_ROOT_ADDR=127.0.0.1:4242"});
  for (const std::string& v : vars) {
    CHECK(is_launch_variable(v.c_str()));
    const size_t eq = v.find('=');
    if (v.compare(0, eq, "HCOMM_RANK") == 0 || v.compare(0, eq, "HCOMM_WORLD_SIZE") == 0 ||
        v.compare(0, eq, "HCOMM_ROOT_ADDR") == 0)
      env.set(v.substr(0, eq).c_str(), v.substr(eq + 1).c_str());
  }
  auto e = read_launch_env();
  REQUIRE(e.ok());
  CHECK(e->rank == 2);
  CHECK(e->world_size == 5);
  CHECK(e->root_addr == "127.0.0.1:4242");
  CHECK(e->source == "HCOMM");
  for (const char* other :
       {"HCOMM_RANKS=1", "HCOMM_RANK", "RANK=1", "XHCOMM_RANK=1", "HCOMM_DEBUG=INFO"})
    CHECK_FALSE(is_launch_variable(other));
}

TEST_CASE("parse_host_port splits host:port and refuses what it cannot use") {
  auto hp = parse_host_port("10.0.0.1:29500");
  REQUIRE(hp.ok());
  CHECK(hp->host == "10.0.0.1");
  CHECK(hp->port == 29500);
  hp = parse_host_port("node-001.cluster:1");
  REQUIRE(hp.ok());
  CHECK(hp->host == "node-001.cluster");
  CHECK(hp->port == 1);
  hp = parse_host_port("localhost:65535");
  REQUIRE(hp.ok());
  CHECK(hp->port == 65535);

  const char* bad[] = {"",         "node1",       ":29500",      "node1:", "node1:65536",
                       "node1:-1", "node1:29x",   "[::1]:29500", "::1",    "fe80::1:29500",
                       "no de:1",  "node1:123456"};
  for (const char* s : bad) {
    CAPTURE(s);
    auto r = parse_host_port(s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == HCOMM_ERR_INVALID_ARG);
    CHECK(contains(r.status().message(), "host:port"));
  }
  CHECK(contains(parse_host_port("[::1]:29500").status().message(), "IPv6"));
}

// ------------------------------------------------------------------------------------------------
// Config::from_env

TEST_CASE("Config::from_env returns the defaults in a clean environment") {
  CleanEnv env;
  auto c = Config::from_env();
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  Config d;
  CHECK(c->rank == -1);
  CHECK(c->world_size == -1);
  CHECK(c->root_addr == d.root_addr);
  CHECK(c->transport == "auto");
  CHECK(c->send_buf_size == 0);
  CHECK(c->chunk_bytes == d.chunk_bytes);
  CHECK(c->connect_timeout == d.connect_timeout);
  CHECK(c->op_timeout == d.op_timeout);
  CHECK(c->actor_threads == d.actor_threads);
}

TEST_CASE("Config::from_env applies the launcher and every HCOMM_* knob") {
  CleanEnv env;
  env.set("RANK", "3");
  env.set("WORLD_SIZE", "5");
  env.set("MASTER_ADDR", "127.0.0.1");
  env.set("MASTER_PORT", "31000");
  env.set("HCOMM_SOCKET_IFNAME", "eth1");
  env.set("HCOMM_TRANSPORT", "TCP");
  env.set("HCOMM_SEND_BUF_SIZE", "4M");
  env.set("HCOMM_RECV_BUF_SIZE", "65536");
  env.set("HCOMM_SOCKETS_PER_PEER", "16");
  env.set("HCOMM_CHUNK_SIZE", "64");
  env.set("HCOMM_CONNECT_TIMEOUT_MS", "1500");
  env.set("HCOMM_TIMEOUT_MS", "60000");
  env.set("HCOMM_ACTOR_THREADS", "64");
  auto c = Config::from_env();
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->rank == 3);
  CHECK(c->world_size == 5);
  CHECK(c->root_addr == "127.0.0.1:31000");
  CHECK(c->socket_ifname == "eth1");
  CHECK(c->transport == "tcp");
  CHECK(c->send_buf_size == 4u << 20);
  CHECK(c->recv_buf_size == 65536);
  CHECK(c->sockets_per_peer == 16);
  CHECK(c->chunk_bytes == 64);
  CHECK(c->connect_timeout == 1500ms);
  CHECK(c->op_timeout == 60000ms);
  CHECK(c->actor_threads == 64);
}

TEST_CASE("size variables accept bytes and K/M/G suffixes") {
  CleanEnv env;
  const std::pair<const char*, size_t> good[] = {
      {"0", 0},           {"123", 123},      {"64k", 64u << 10}, {"64K", 64u << 10},
      {"4M", 4u << 20},   {"4MB", 4u << 20}, {"4MiB", 4u << 20}, {"1G", size_t{1} << 30},
      {" 8m ", 8u << 20}, {"100b", 100},
  };
  for (const auto& g : good) {
    const char* text = g.first;
    CAPTURE(text);
    env.set("HCOMM_SEND_BUF_SIZE", text);
    auto c = Config::from_env();
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    CHECK(c->send_buf_size == g.second);
  }
  const char* bad[] = {"4X", "-1", "M", "4 M B", "1.5M", "2G", "99999999999999999999", "4KK"};
  for (const char* text : bad) {
    CAPTURE(text);
    env.set("HCOMM_RECV_BUF_SIZE", text);
    auto c = Config::from_env();
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == HCOMM_ERR_INVALID_ARG);
    CHECK(contains(c.status().message(), "HCOMM_RECV_BUF_SIZE"));
    CHECK(contains(c.status().message(), text));
    CHECK(contains(c.status().message(), "suffix"));
  }
}

TEST_CASE("out-of-range or malformed HCOMM_* knobs fail naming variable, value and range") {
  struct Case {
    const char* name;
    const char* value;
    const char* accepted;  ///< part of the message that says what is accepted
  };
  const Case cases[] = {
      {"HCOMM_SOCKETS_PER_PEER", "0", "[1, 16]"},
      {"HCOMM_SOCKETS_PER_PEER", "17", "[1, 16]"},
      {"HCOMM_SOCKETS_PER_PEER", "two", "[1, 16]"},
      {"HCOMM_ACTOR_THREADS", "65", "[1, 64]"},
      {"HCOMM_ACTOR_THREADS", "0", "[1, 64]"},
      {"HCOMM_CHUNK_SIZE", "63", "64 bytes"},
      {"HCOMM_CHUNK_SIZE", "2G", "64 bytes"},
      {"HCOMM_CONNECT_TIMEOUT_MS", "0", "milliseconds"},
      {"HCOMM_CONNECT_TIMEOUT_MS", "10s", "milliseconds"},
      {"HCOMM_TIMEOUT_MS", "-5", "milliseconds"},
      {"HCOMM_TRANSPORT", "carrier-pigeon", "tcp"},
  };
  for (const auto& c : cases) {
    CleanEnv env;
    env.set(c.name, c.value);
    CAPTURE(c.name);
    CAPTURE(c.value);
    auto r = Config::from_env();
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == HCOMM_ERR_INVALID_ARG);
    CHECK_MESSAGE(contains(r.status().message(), c.name), r.status().message());
    CHECK_MESSAGE(contains(r.status().message(), c.value), r.status().message());
    CHECK_MESSAGE(contains(r.status().message(), c.accepted), r.status().message());
  }
}

TEST_CASE("Config::from_env passes launcher errors through") {
  CleanEnv env;
  env.set("HCOMM_RANK", "x");
  env.set("HCOMM_WORLD_SIZE", "2");
  auto c = Config::from_env();
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == HCOMM_ERR_INVALID_ARG);
  CHECK(contains(c.status().message(), "HCOMM_RANK"));
}

// ------------------------------------------------------------------------------------------------
// Local addresses

TEST_CASE("interface_ipv4 of lo is 127.0.0.1") {
  auto a = interface_ipv4("lo");
  REQUIRE_MESSAGE(a.ok(), a.status().message());
  CHECK(*a == "127.0.0.1");
}

TEST_CASE("interface_ipv4 of a missing interface lists the interfaces that exist") {
  auto a = interface_ipv4("nope0");
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().code() == HCOMM_ERR_INVALID_ARG);
  CHECK(contains(a.status().message(), "nope0"));
  CHECK(contains(a.status().message(), "lo (127.0.0.1)"));
  CHECK(contains(a.status().message(), "HCOMM_SOCKET_IFNAME"));
}

TEST_CASE("pick_local_address uses loopback for a loopback root and the named interface first") {
  for (const char* root : {"127.0.0.1", "localhost", "127.0.1.1"}) {
    CAPTURE(root);
    auto a = pick_local_address("", root);
    REQUIRE_MESSAGE(a.ok(), a.status().message());
    CHECK(*a == "127.0.0.1");
  }
  auto a = pick_local_address("lo", "10.9.8.7");
  REQUIRE_MESSAGE(a.ok(), a.status().message());
  CHECK(*a == "127.0.0.1");
  auto bad = pick_local_address("nope0", "127.0.0.1");
  CHECK(bad.status().code() == HCOMM_ERR_INVALID_ARG);
}

TEST_CASE("pick_local_address for a remote root gives an address or says why not") {
  auto a = pick_local_address("", "192.0.2.1");  // TEST-NET-1: routed by default, never answers
  if (a.ok()) {
    in_addr parsed{};
    CHECK(inet_pton(AF_INET, a->c_str(), &parsed) == 1);
  } else {
    CHECK(a.status().code() == HCOMM_ERR_NO_DEVICE);
    CHECK(contains(a.status().message(), "HCOMM_SOCKET_IFNAME"));
  }
}

// ------------------------------------------------------------------------------------------------
// Rendezvous store

TEST_CASE("store set, get, overwrite, binary values and counters") {
  auto server = start_server();
  auto client = connect_client(server->port());

  REQUIRE(client->set("a", "1").ok());
  auto v = client->get("a", 1000ms);
  REQUIRE_MESSAGE(v.ok(), v.status().message());
  CHECK(*v == "1");
  REQUIRE(client->set("a", "two").ok());
  CHECK(*client->get("a", 1000ms) == "two");

  const std::string binary("\0\x01\xff\n\0end", 8);
  REQUIRE(client->set(std::string("k\0ey", 4), binary).ok());
  CHECK(*client->get(std::string("k\0ey", 4), 1000ms) == binary);
  REQUIRE(client->set("empty", "").ok());
  CHECK(client->get("empty", 1000ms).value().empty());

  auto n = client->add("counter", 5);
  REQUIRE_MESSAGE(n.ok(), n.status().message());
  CHECK(*n == 5);
  CHECK(*client->add("counter", -7) == -2);
  CHECK(*client->get("counter", 1000ms) == "-2");

  auto refused = client->add("a", 1);  // "two" is not a counter
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == HCOMM_ERR_INVALID_ARG);
  CHECK(contains(refused.status().message(), "counter"));
  CHECK(client->set("still", "usable").ok());
}

TEST_CASE("store rejects keys over 4 KiB, empty keys and values over 16 MiB") {
  auto server = start_server();
  auto client = connect_client(server->port());
  CHECK(client->set(std::string(4096, 'k'), "ok").ok());
  auto st = client->set(std::string(4097, 'k'), "v");
  CHECK(st.code() == HCOMM_ERR_INVALID_ARG);
  CHECK(contains(st.message(), "4096"));
  CHECK(client->set("", "v").code() == HCOMM_ERR_INVALID_ARG);
  st = client->set("big", std::string((size_t{16} << 20) + 1, 'x'));
  CHECK(st.code() == HCOMM_ERR_INVALID_ARG);
  CHECK(contains(st.message(), "16 MiB"));
  CHECK(client->set("after", "fine").ok());
}

TEST_CASE("store moves a 16 MiB value through partial reads and writes") {
  auto server = start_server();
  auto writer = connect_client(server->port());
  auto reader = connect_client(server->port());
  std::string value(16u << 20, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>((i * 131) ^ (i >> 9));
  std::optional<Expected<std::string>> got;
  std::thread t([&] { got = reader->get("big", 10000ms); });
  std::this_thread::sleep_for(50ms);
  REQUIRE(writer->set("big", value).ok());
  t.join();
  REQUIRE(got.has_value());
  REQUIRE_MESSAGE(got->ok(), got->status().message());
  CHECK(got->value() == value);
}

TEST_CASE("store serves several client threads at once") {
  auto server = start_server();
  const int kClients = 8;
  const uint16_t port = server->port();
  std::vector<std::string> errors(kClients);
  std::vector<int64_t> last(kClients, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      auto c = StoreClient::connect("127.0.0.1", port, 5000ms);
      if (!c.ok()) {
        errors[i] = c.status().message();
        return;
      }
      auto& client = *c;
      std::vector<std::string> keys;
      for (int j = 0; j < kClients; ++j) keys.push_back("addr/" + std::to_string(j));
      for (int round = 0; round < 50; ++round) {
        auto n = client->add("counter", 1);
        if (!n.ok()) errors[i] = n.status().message();
        last[i] = std::max(last[i], n.value());
      }
      Status st = client->set(keys[i], "rank-" + std::to_string(i));
      if (st.ok()) st = client->wait(keys, 10000ms, nullptr);
      if (!st.ok()) errors[i] = st.message();
      for (int j = 0; j < kClients && st.ok(); ++j) {
        auto v = client->get(keys[j], 1000ms);
        if (!v.ok() || *v != "rank-" + std::to_string(j)) errors[i] = "wrong value for " + keys[j];
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) CHECK_MESSAGE(errors[i].empty(), errors[i]);
  CHECK(*std::max_element(last.begin(), last.end()) == kClients * 50);
  auto client = connect_client(port);
  CHECK(*client->get("counter", 1000ms) == std::to_string(kClients * 50));
}

TEST_CASE("a GET blocks until another client sets the key") {
  auto server = start_server();
  auto waiter = connect_client(server->port());
  auto setter = connect_client(server->port());
  std::atomic<bool> returned{false};
  std::optional<Expected<std::string>> got;
  long waited_ms = 0;
  std::thread t([&] {
    auto t0 = Clock::now();
    got = waiter->get("late", 10000ms);
    waited_ms = ms_since(t0);
    returned = true;
  });
  std::this_thread::sleep_for(300ms);
  CHECK_FALSE(returned.load());
  REQUIRE(setter->set("late", "here").ok());
  t.join();
  REQUIRE(got.has_value());
  REQUIRE_MESSAGE(got->ok(), got->status().message());
  CHECK(got->value() == "here");
  CHECK(waited_ms >= 250);
  CHECK(waited_ms < 5000);
}

TEST_CASE("one SET wakes every client parked on the key") {
  auto server = start_server();
  const int kWaiters = 6;
  std::vector<std::unique_ptr<StoreClient>> clients;
  for (int i = 0; i < kWaiters; ++i) clients.push_back(connect_client(server->port()));
  std::vector<std::string> values(kWaiters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      if (i % 2 == 0) {
        auto v = clients[i]->get("go", 10000ms);
        values[i] = v.ok() ? *v : v.status().message();
      } else {
        Status st = clients[i]->wait({"go"}, 10000ms, nullptr);
        values[i] = st.ok() ? "go!" : st.message();
      }
    });
  }
  std::this_thread::sleep_for(100ms);
  auto setter = connect_client(server->port());
  REQUIRE(setter->set("go", "go!").ok());
  for (auto& t : threads) t.join();
  for (int i = 0; i < kWaiters; ++i) CHECK(values[i] == "go!");
}

TEST_CASE("a client speaking another protocol version is refused with a clear reply") {
  auto server = start_server();
  int fd = hcomm_test::raw_connect(server->port());
  std::string hello =
      store_wire::FrameWriter().u8(store_wire::kHello).u32(store_wire::kMagic).u32(99).take();
  CHECK(send(fd, hello.data(), hello.size(), 0) == static_cast<ssize_t>(hello.size()));
  std::string reply;
  char buf[512];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;)
    reply.append(buf, static_cast<size_t>(n));
  close(fd);  // the server closed its side after the reply
  REQUIRE(reply.size() > 5);
  store_wire::FrameReader r(reply.data() + 4, reply.size() - 4);
  uint8_t code = 0;
  std::string message;
  CHECK(r.u8(&code));
  CHECK(code == store_wire::kError);
  CHECK(r.str(&message));
  CHECK(contains(message, "version 99"));
}

TEST_CASE("an ADD wakes a parked WAIT") {
  auto server = start_server();
  auto waiter = connect_client(server->port());
  auto adder = connect_client(server->port());
  Status result(HCOMM_ERR_INTERNAL, "not run");
  std::thread t([&] { result = waiter->wait({"x", "n"}, 10000ms, nullptr); });
  std::this_thread::sleep_for(100ms);
  REQUIRE(adder->set("x", "1").ok());
  REQUIRE(adder->add("n", 1).ok());
  t.join();
  CHECK_MESSAGE(result.ok(), result.message());
}

TEST_CASE("a GET that times out says so, and the connection stays usable") {
  auto server = start_server();
  auto client = connect_client(server->port());
  auto t0 = Clock::now();
  auto v = client->get("never", 200ms);
  long took = ms_since(t0);
  REQUIRE_FALSE(v.ok());
  CHECK(v.status().code() == HCOMM_ERR_TIMEOUT);
  CHECK(contains(v.status().message(), "never"));
  CHECK(took >= 190);
  CHECK(took < 2000);
  CHECK(client->get("never", 0ms).status().code() == HCOMM_ERR_TIMEOUT);
  CHECK(client->set("x", "y").ok());
  CHECK(*client->get("x", 0ms) == "y");
}

TEST_CASE("wait() times out listing exactly the keys the server still lacks") {
  auto server = start_server();
  auto client = connect_client(server->port());
  REQUIRE(client->set("a", "1").ok());
  REQUIRE(client->set("c", "3").ok());
  std::vector<std::string> missing = {"stale"};
  auto t0 = Clock::now();
  Status st = client->wait({"a", "b", "c", "d", "b"}, 300ms, &missing);
  long took = ms_since(t0);
  CHECK(st.code() == HCOMM_ERR_TIMEOUT);
  CHECK(missing == std::vector<std::string>{"b", "d"});
  CHECK(contains(st.message(), "'b'"));
  CHECK(contains(st.message(), "'d'"));
  CHECK(took >= 290);
  CHECK(took < 2500);

  // A key set while the WAIT is parked is not reported missing.
  auto other = connect_client(server->port());
  std::thread t([&] {
    std::this_thread::sleep_for(100ms);
    (void)other->set("b", "2");
  });
  st = client->wait({"a", "b", "d"}, 500ms, &missing);
  t.join();
  CHECK(st.code() == HCOMM_ERR_TIMEOUT);
  CHECK(missing == std::vector<std::string>{"d"});

  REQUIRE(client->set("d", "4").ok());
  CHECK(client->wait({"a", "b", "c", "d"}, 100ms, &missing).ok());
  CHECK(missing.empty());
  CHECK(client->wait({}, 0ms, &missing).ok());
}

TEST_CASE("connecting to a port nobody listens on times out within the deadline") {
  RefusingPort nobody;
  auto t0 = Clock::now();
  auto c = StoreClient::connect("127.0.0.1", nobody.port(), 400ms);
  long took = ms_since(t0);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == HCOMM_ERR_TIMEOUT);
  const std::string& m = c.status().message();
  CHECK_MESSAGE(contains(m, "127.0.0.1:" + std::to_string(nobody.port())), m);
  CHECK(contains(m, "400 ms"));
  CHECK(contains(m, "HCOMM_ROOT_ADDR"));
  CHECK(took >= 390);
  CHECK(took < 1500);
}

TEST_CASE("connecting to an unresolvable host fails at once") {
  auto t0 = Clock::now();
  auto c = StoreClient::connect("no-such-host.invalid", 1, 3000ms);
  REQUIRE_FALSE(c.ok());
  CHECK((c.status().code() == HCOMM_ERR_INVALID_ARG || c.status().code() == HCOMM_ERR_TIMEOUT));
  CHECK(contains(c.status().message(), "no-such-host.invalid"));
  CHECK(ms_since(t0) < 4000);
}

TEST_CASE("a client waits for a root that starts after it") {
  RefusingPort reserved;
  const uint16_t port = reserved.port();
  std::optional<Expected<std::unique_ptr<StoreClient>>> result;
  std::thread t([&] { result = StoreClient::connect("127.0.0.1", port, 10000ms); });
  std::this_thread::sleep_for(300ms);
  reserved.release();
  auto server = StoreServer::start("127.0.0.1", port);
  REQUIRE_MESSAGE(server.ok(), server.status().message());
  t.join();
  REQUIRE(result.has_value());
  REQUIRE_MESSAGE(result->ok(), result->status().message());
  CHECK(result->value()->set("k", "v").ok());
}

TEST_CASE("connecting to something that is not a store times out with a hint") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0);
  REQUIRE(listen(fd, 4) == 0);  // the kernel completes connections; nobody ever answers
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  auto c = StoreClient::connect("127.0.0.1", ntohs(sa.sin_port), 300ms);
  close(fd);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == HCOMM_ERR_TIMEOUT);
  CHECK(contains(c.status().message(), "another service"));
}

TEST_CASE("a second server on a port in use fails naming the address") {
  auto first = start_server();
  auto second = StoreServer::start("127.0.0.1", first->port());
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == HCOMM_ERR_TRANSPORT);
  const std::string& m = second.status().message();
  CHECK_MESSAGE(contains(m, "127.0.0.1:" + std::to_string(first->port())), m);
  CHECK(contains(m, "in use"));
  CHECK(contains(m, "HCOMM_ROOT_ADDR"));
}

TEST_CASE("destroying the server fails parked clients quickly instead of hanging them") {
  auto server = start_server();
  const int kClients = 3;
  std::vector<std::unique_ptr<StoreClient>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(connect_client(server->port()));
  std::vector<Status> results(kClients);
  std::vector<long> took(kClients, 0);
  std::vector<std::thread> threads;
  auto t0 = Clock::now();
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      if (i == 0) {
        results[i] = clients[i]->get("never", 30000ms).status();
      } else {
        results[i] = clients[i]->wait({"never", "either"}, 30000ms, nullptr);
      }
      took[i] = ms_since(t0);
    });
  }
  std::this_thread::sleep_for(200ms);
  auto destroy_start = Clock::now();
  server.reset();
  long destroy_ms = ms_since(destroy_start);
  for (auto& t : threads) t.join();
  CHECK(destroy_ms < 1000);
  for (int i = 0; i < kClients; ++i) {
    CAPTURE(i);
    CHECK(results[i].code() == HCOMM_ERR_TRANSPORT);
    CHECK(contains(results[i].message(), "127.0.0.1:"));
    CHECK(took[i] < 3000);
  }
  // The failure is cached: later calls fail at once with it.
  CHECK(clients[0]->set("x", "y").code() == HCOMM_ERR_TRANSPORT);
}

TEST_CASE("the server survives garbage, half frames and clients that vanish") {
  auto server = start_server();
  auto good = connect_client(server->port());

  int http = hcomm_test::raw_connect(server->port());
  const char request[] = "GET / HTTP/1.0\r\n\r\n";
  CHECK(send(http, request, sizeof(request) - 1, 0) > 0);
  char buf[16];
  CHECK(recv(http, buf, sizeof(buf), 0) == 0);  // the server closes it
  close(http);

  // A HELLO, then the first bytes of a SET, then gone.
  int half = hcomm_test::raw_connect(server->port());
  hcomm::bootstrap::store_wire::FrameWriter hello;
  hello.u8(store_wire::kHello).u32(store_wire::kMagic).u32(store_wire::kVersion);
  std::string frame = hello.take();
  frame += store_wire::FrameWriter().u8(store_wire::kSet).str("k").str("value").take().substr(0, 9);
  CHECK(send(half, frame.data(), frame.size(), 0) == static_cast<ssize_t>(frame.size()));
  close(half);

  // A client parked in a GET that disconnects.
  {
    auto leaving = connect_client(server->port());
    std::thread t([&] { (void)leaving->get("nobody", 100ms); });
    t.join();
  }
  int parked = hcomm_test::raw_connect(server->port());
  std::string req = store_wire::FrameWriter()
                        .u8(store_wire::kHello)
                        .u32(store_wire::kMagic)
                        .u32(store_wire::kVersion)
                        .take();
  req += store_wire::FrameWriter().u8(store_wire::kGet).u32(60000).str("later").take();
  CHECK(send(parked, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
  std::this_thread::sleep_for(50ms);
  close(parked);
  std::this_thread::sleep_for(50ms);

  CHECK(good->set("later", "v").ok());
  CHECK(*good->get("later", 1000ms) == "v");
  auto fresh = connect_client(server->port());
  CHECK(*fresh->get("later", 1000ms) == "v");
}
