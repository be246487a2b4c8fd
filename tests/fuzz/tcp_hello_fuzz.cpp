// The TCP listener's side of a connection's start, as an outsider or a confused peer drives it:
// the job-key handshake (core/auth_handshake.hpp) and the 40-byte Hello (tcp_socket.hpp). The
// real TcpListener listens on 127.0.0.1 on a ProgressEngine; a client socket connects and sends
// what the input says. First byte: bit 0 the listener holds a job key; bit 1 the client first
// runs an honest handshake with that key (bit 2: with another key), whose result must match the
// keys. The rest is sent in chunks whose sizes the input picks (one length byte, then the bytes).
// The listener must close the connection or park it (a well-formed Hello for this communicator),
// within bounds and without crashing, whatever arrives; an authenticated connection must never
// be refused for the handshake, and a client with a different key never authenticated.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/auth_handshake.hpp"
#include "tests/fuzz/fuzz_engine.hpp"
#include "tests/fuzz/fuzz_keys.hpp"
#include "transport/tcp/tcp_listener.hpp"

using hcomm::core::AuthHandshake;
using hcomm::core::JobKey;
using hcomm::fuzz::check;
using hcomm::fuzz::engine;
using hcomm::fuzz::key;
using hcomm::fuzz::on_engine;
using hcomm::transport::ProgressEngine;
using hcomm::transport::tcp::TcpListener;

namespace {

constexpr uint64_t kCommUid = 0x5eed;
constexpr int kWorldSize = 4;

std::unique_ptr<TcpListener> listen(std::shared_ptr<const JobKey> k) {
  std::unique_ptr<TcpListener> listener;
  on_engine([&] {
    auto made = TcpListener::bind(engine(), "127.0.0.1", kCommUid, kWorldSize, std::move(k));
    check(made.ok());
    listener = std::move(made.value());
    listener->start();
  });
  return listener;
}

int connect_to(const std::string& endpoint) {
  const auto colon = endpoint.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(endpoint.substr(colon + 1))));
  inet_pton(AF_INET, endpoint.substr(0, colon).c_str(), &addr.sin_addr);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  check(fd >= 0);
  const int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  check(rc == 0 || errno == EINPROGRESS);
  return fd;
}

/// The client's end: reads what the listener sent (false once it closed the connection).
struct Client {
  int fd;
  std::string received;
  bool open = true;

  bool poll() {
    char buf[256];
    for (;;) {
      const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        received.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) open = false;
      return open;
    }
  }
  void send_all(const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = send(fd, p, size, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n <= 0) return;  // refused meanwhile, or the buffer is full: the rest is lost
      p += n;
      size -= static_cast<size_t>(n);
    }
  }
};

/// Drives the engine for up to `most`, or until `stop()` is true.
template <typename F>
void drive(std::chrono::microseconds most, F stop) {
  engine().drive_until(stop, ProgressEngine::Clock::now() + most);
}

/// Runs the honest side of the handshake; true when it completed (the listener accepted it).
bool handshake(Client& c, const std::shared_ptr<const JobKey>& k) {
  AuthHandshake side(k, AuthHandshake::Role::connector);
  const auto until = ProgressEngine::Clock::now() + std::chrono::milliseconds(50);
  while (!side.done() && !side.failed() && ProgressEngine::Clock::now() < until) {
    if (!side.output().empty()) {
      c.send_all(side.output().data(), side.output().size());
      side.output().clear();
    }
    drive(std::chrono::microseconds(200), [&] { return false; });
    const bool open = c.poll();
    while (!c.received.empty() && side.wanted() > 0 && !side.failed()) {
      const size_t n = std::min(c.received.size(), side.wanted());
      side.feed(reinterpret_cast<const uint8_t*>(c.received.data()), n);
      c.received.erase(0, n);
    }
    if (!open) break;
  }
  if (side.done() && !side.output().empty()) c.send_all(side.output().data(), side.output().size());
  return side.done();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  engine();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const auto ours = key("fuzz-job-key-0123456789");
  static const auto other = key("another-job-key-987654");
  const uint8_t mode = data[0];
  const bool keyed = (mode & 1) != 0;
  auto listener = listen(keyed ? ours : nullptr);
  Client client{connect_to(listener->endpoint()), {}, true};
  drive(std::chrono::microseconds(500), [] { return false; });  // accepted, greeting sent

  if (keyed && (mode & 2)) {
    const bool same_key = (mode & 4) == 0;
    const bool in = handshake(client, same_key ? ours : other);
    check(in == same_key);
  }
  size_t at = 1;
  while (at < size && client.open) {
    const size_t want = size_t{data[at]} + 1;
    ++at;
    const size_t chunk = std::min(want, size - at);
    client.send_all(data + at, chunk);
    at += chunk;
    drive(std::chrono::microseconds(300), [] { return false; });
    client.poll();
  }
  shutdown(client.fd, SHUT_WR);  // the client is done: a short hello ends here
  drive(std::chrono::milliseconds(3), [&] { return !client.poll(); });
  on_engine([&] { listener.reset(); });  // closes what it parked or still reads
  close(client.fd);
  return 0;
}
