// TlsSession over a socket pair with small socket buffers: the handshake in both key modes, and
// a stream of mixed small and large pieces written with would_block retries (the same bytes
// first) arriving whole and in order; a peer with another key is refused.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/job_key.hpp"
#include "transport/tcp/tls_context.hpp"
#include "transport/tcp/tls_session.hpp"

using hcomm::core::JobKey;
using hcomm::transport::tcp::TlsContext;
using hcomm::transport::tcp::TlsSession;
using Result = TlsSession::Result;

namespace {

struct Pair {
  int fds[2] = {-1, -1};
  Pair() {
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    for (int fd : fds) {
      int small = 16384;
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
  }
  ~Pair() {
    for (int fd : fds) close(fd);
  }
};

std::shared_ptr<const TlsContext> psk_context(const char* secret) {
  auto key = JobKey::from_secret(secret);
  REQUIRE(key.ok());
  auto tls = TlsContext::with_job_key(key.value());
  REQUIRE(tls.ok());
  return tls.value();
}

/// Runs both handshakes to their end; true when both succeeded.
bool handshake(TlsSession& client, TlsSession& server) {
  for (int i = 0; i < 1000; ++i) {
    const Result c = client.handshake(), s = server.handshake();
    if (c == Result::failed || s == Result::failed) {
      MESSAGE("handshake failed: client: " << client.error() << "; server: " << server.error());
      return false;
    }
    if (c == Result::ok && s == Result::ok) return true;
  }
  FAIL("the handshakes did not finish");
  return false;
}

}  // namespace

TEST_CASE("TLS with a key derived from the job key carries mixed pieces whole, with retries") {
  const auto tls = psk_context("tls-unit-test-secret-0123456789");
  Pair p;
  TlsSession client(*tls, TlsContext::Role::client, p.fds[0]);
  TlsSession server(*tls, TlsContext::Role::server, p.fds[1]);
  REQUIRE(client.error().empty());
  REQUIRE(handshake(client, server));

  // Pieces like a frame stream: 64-byte headers, small and large payloads.
  std::mt19937 rng(7);
  std::vector<std::vector<char>> pieces;
  std::vector<char> sent;
  for (int i = 0; i < 300; ++i) {
    const size_t sizes[] = {64, 1, 700, 4095, 4096, 20000, 100000, 1 << 20};
    std::vector<char> piece(sizes[rng() % 8]);
    for (char& c : piece) c = static_cast<char>(rng());
    sent.insert(sent.end(), piece.begin(), piece.end());
    pieces.push_back(std::move(piece));
  }
  std::vector<char> received;
  size_t piece = 0, offset = 0;  // the writer's position: the next unwritten byte
  int would_block = 0;
  while (received.size() < sent.size()) {
    if (piece < pieces.size()) {
      iovec iov[8];
      int n = 0;
      for (size_t k = piece; k < pieces.size() && n < 8; ++k, ++n) {
        const size_t skip = k == piece ? offset : 0;
        iov[n] = {pieces[k].data() + skip, pieces[k].size() - skip};
      }
      size_t put = 0;
      const Result r = client.write(iov, n, &put);
      REQUIRE(r != Result::failed);
      if (r == Result::would_block) ++would_block;
      while (put > 0) {  // advance as the stream's queue does
        const size_t take = std::min(put, pieces[piece].size() - offset);
        offset += take;
        put -= take;
        if (offset == pieces[piece].size()) ++piece, offset = 0;
      }
    }
    char buf[65536];
    size_t got = 0;
    Result r;
    while ((r = server.read(buf, sizeof(buf), &got)) == Result::ok)
      received.insert(received.end(), buf, buf + got);
    REQUIRE(r == Result::would_block);
  }
  CHECK(would_block > 0);  // the small buffers made the writer retry
  CHECK(received == sent);
}

TEST_CASE("TLS refuses a peer whose job key differs") {
  const auto ours = psk_context("tls-unit-test-secret-0123456789");
  const auto theirs = psk_context("another-secret-of-another-job-42");
  Pair p;
  TlsSession client(*theirs, TlsContext::Role::client, p.fds[0]);
  TlsSession server(*ours, TlsContext::Role::server, p.fds[1]);
  CHECK_FALSE(handshake(client, server));
  CHECK_FALSE((client.error() + server.error()).empty());
}

TEST_CASE("TLS end of stream reads as closed") {
  const auto tls = psk_context("tls-unit-test-secret-0123456789");
  Pair p;
  TlsSession client(*tls, TlsContext::Role::client, p.fds[0]);
  TlsSession server(*tls, TlsContext::Role::server, p.fds[1]);
  REQUIRE(handshake(client, server));
  client.close_notify();
  shutdown(p.fds[0], SHUT_WR);
  char buf[16];
  size_t got = 0;
  CHECK(server.read(buf, sizeof(buf), &got) == Result::closed);
}
