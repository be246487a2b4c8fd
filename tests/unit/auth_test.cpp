// The job key and its handshake (core/job_key, core/auth_handshake), the store's limits
// (bootstrap/store_table) and the rendezvous store with a key: who gets in and who does not.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "bootstrap/store_client.hpp"
#include "bootstrap/store_server.hpp"
#include "bootstrap/store_table.hpp"
#include "core/auth_handshake.hpp"
#include "core/job_key.hpp"
#include "doctest/doctest.h"
#include "tests/unit/raw_socket.hpp"

using hcomm::Status;
using hcomm::bootstrap::StoreClient;
using hcomm::bootstrap::StoreLimits;
using hcomm::bootstrap::StoreServer;
using hcomm::bootstrap::StoreServerOptions;
using hcomm::bootstrap::StoreTable;
using hcomm::core::AuthHandshake;
using hcomm::core::JobKey;
using namespace std::chrono_literals;

namespace {

std::shared_ptr<const JobKey> key_of(const std::string& secret) {
  auto key = JobKey::from_secret(secret);
  REQUIRE_MESSAGE(key.ok(), key.status().message());
  return key.value();
}

/// Moves bytes between two handshakes until neither has anything to say; `chunk` bytes at a time.
void pump(AuthHandshake& a, AuthHandshake& b, size_t chunk) {
  for (int round = 0; round < 1000; ++round) {
    bool moved = false;
    for (auto [from, to] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
      std::string& out = from->output();
      const size_t n = std::min({chunk, out.size(), to->wanted()});
      if (n == 0) continue;
      to->feed(reinterpret_cast<const uint8_t*>(out.data()), n);
      out.erase(0, n);
      moved = true;
    }
    if (!moved) return;
  }
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Reads until the peer closes or `limit` passes; true when it closed.
bool closed_within(int fd, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  char buf[256];
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return true;
  }
  return false;
}

std::unique_ptr<StoreServer> keyed_server(std::shared_ptr<const JobKey> key,
                                          std::chrono::milliseconds greeting = 5000ms) {
  StoreServerOptions o;
  o.key = std::move(key);
  o.greeting_timeout = greeting;
  auto server = StoreServer::start("127.0.0.1", 0, o);
  REQUIRE_MESSAGE(server.ok(), server.status().message());
  return std::move(server.value());
}

}  // namespace

TEST_CASE("two sides with the same key authenticate, whole or byte by byte") {
  const auto key = key_of("0123456789abcdef-the-job");
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{100}}) {
    AuthHandshake c(key, AuthHandshake::Role::connector);
    AuthHandshake a(key, AuthHandshake::Role::acceptor);
    pump(c, a, chunk);
    CHECK(c.done());
    CHECK(a.done());
    CHECK(c.wanted() == 0);
    CHECK(a.wanted() == 0);
  }
}

TEST_CASE("a wrong key fails at the acceptor, which proves nothing to the connector") {
  AuthHandshake c(key_of("an outsider's guess!!"), AuthHandshake::Role::connector);
  AuthHandshake a(key_of("0123456789abcdef-the-job"), AuthHandshake::Role::acceptor);
  pump(c, a, 64);
  CHECK(a.failed());
  CHECK(contains(a.failure(), "wrong job key"));
  CHECK_FALSE(c.done());
  // All the acceptor ever sent was its greeting: no proof an outsider could use.
  CHECK(c.wanted() == JobKey::kMacBytes);
}

TEST_CASE("a peer that does not authenticate is refused at its first 4 bytes") {
  AuthHandshake a(key_of("0123456789abcdef-the-job"), AuthHandshake::Role::acceptor);
  const uint8_t store_hello[] = {0, 0, 0, 9, 0, 'H', 'C', 'S', 'T'};
  a.feed(store_hello, 4);
  CHECK(a.failed());
  CHECK(contains(a.failure(), "did not authenticate"));
  CHECK(a.wanted() == 0);
}

TEST_CASE("a handshake refuses its own greeting reflected back") {
  AuthHandshake a(key_of("0123456789abcdef-the-job"), AuthHandshake::Role::acceptor);
  const std::string mine = a.output();
  a.feed(reinterpret_cast<const uint8_t*>(mine.data()), mine.size());
  CHECK(a.failed());
}

TEST_CASE("a secret shorter than 16 bytes is refused with a hint") {
  auto key = JobKey::from_secret("short");
  CHECK(key.status().code() == HCOMM_ERR_INVALID_ARG);
  CHECK(contains(key.status().message(), "openssl rand"));
  auto secret = hcomm::core::make_job_secret();
  REQUIRE(secret.ok());
  CHECK(secret.value().size() == 64);
  CHECK(JobKey::from_secret(secret.value()).ok());
}

TEST_CASE("the store table refuses what would pass its limit, and counts replacements once") {
  StoreTable table(StoreLimits{1000});
  CHECK(table.set("a", std::string(500, 'x')).ok());
  CHECK(table.bytes() == 1 + 500 + StoreLimits::kKeyOverhead);
  CHECK(table.set("a", std::string(600, 'y')).ok());  // replaces: 665 in all
  CHECK(table.bytes() == 1 + 600 + StoreLimits::kKeyOverhead);
  Status full = table.set("b", std::string(400, 'z'));
  CHECK(full.code() == HCOMM_ERR_OUT_OF_MEM);
  CHECK(contains(full.message(), "HCOMM_STORE_MAX_BYTES"));
  CHECK(table.find("b") == nullptr);
  CHECK(table.find("a")->size() == 600);
  CHECK(table.add("n", 5).value() == 5);
  CHECK(table.add("n", -7).value() == -2);
  CHECK(table.add("a", 1).status().code() == HCOMM_ERR_INVALID_ARG);
}

TEST_CASE("a keyed store serves a client with the key and refuses one without or with another") {
  const auto key = key_of("0123456789abcdef-the-job");
  auto server = keyed_server(key);
  auto good = StoreClient::connect("127.0.0.1", server->port(), 3000ms, key);
  REQUIRE_MESSAGE(good.ok(), good.status().message());
  CHECK(good.value()->set("k", "v").ok());
  CHECK(good.value()->get("k", 100ms).value() == "v");

  auto none = StoreClient::connect("127.0.0.1", server->port(), 3000ms);
  CHECK_FALSE(none.ok());
  INFO(none.status().message());
  CHECK(contains(none.status().message(), "requires a job key"));
  auto wrong =
      StoreClient::connect("127.0.0.1", server->port(), 3000ms, key_of("an outsider's guess!!"));
  CHECK_FALSE(wrong.ok());
  CHECK(contains(wrong.status().message(), "HCOMM_JOB_KEY"));
  CHECK(good.value()->get("k", 100ms).value() == "v");
}

TEST_CASE("a store without a key tells a keyed client why it is refused") {
  auto server = StoreServer::start("127.0.0.1", 0);
  REQUIRE(server.ok());
  auto keyed = StoreClient::connect("127.0.0.1", server.value()->port(), 3000ms,
                                    key_of("0123456789abcdef-the-job"));
  CHECK_FALSE(keyed.ok());
  CHECK(contains(keyed.status().message(), "HCOMM_JOB_KEY"));
}

TEST_CASE("a keyed store closes a connection that sends garbage or nothing") {
  auto server = keyed_server(key_of("0123456789abcdef-the-job"), 300ms);
  int garbage = hcomm_test::raw_connect(server->port());
  const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  CHECK(send(garbage, junk, sizeof(junk), 0) > 0);
  CHECK(closed_within(garbage, 2000ms));
  close(garbage);
  int idle = hcomm_test::raw_connect(server->port());
  CHECK(closed_within(idle, 2000ms));
  close(idle);
}

TEST_CASE("a store without a key still closes a client that never says HELLO") {
  StoreServerOptions o;
  o.greeting_timeout = 300ms;
  auto server = StoreServer::start("127.0.0.1", 0, o);
  REQUIRE(server.ok());
  int idle = hcomm_test::raw_connect(server.value()->port());
  CHECK(closed_within(idle, 2000ms));
  close(idle);
  // A HELLO frame that claims a huge length is refused before it arrives.
  int big = hcomm_test::raw_connect(server.value()->port());
  const uint8_t frame[] = {0x10, 0, 0, 0, 0};
  CHECK(send(big, frame, sizeof(frame), 0) > 0);
  CHECK(closed_within(big, 2000ms));
  close(big);
}

TEST_CASE("a full store refuses a SET and keeps serving") {
  StoreServerOptions o;
  o.limits.max_bytes = 1 << 20;
  auto server = StoreServer::start("127.0.0.1", 0, o);
  REQUIRE(server.ok());
  auto client = StoreClient::connect("127.0.0.1", server.value()->port(), 3000ms);
  REQUIRE(client.ok());
  int stored = 0;
  Status st;
  for (int i = 0; i < 100 && st.ok(); ++i) {
    st = client.value()->set("junk/" + std::to_string(i), std::string(64 << 10, 'j'));
    if (st.ok()) ++stored;
  }
  CHECK(stored == 15);  // 16 x (64 KiB + key + 64) passes 1 MiB
  CHECK(contains(st.message(), "full"));
  CHECK(client.value()->get("junk/0", 100ms).ok());
  CHECK(client.value()->add("counter", 1).value() == 1);
}
