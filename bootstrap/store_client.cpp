#include "bootstrap/store_client.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

#include "bootstrap/store_server.hpp"
#include "core/auth_handshake.hpp"
#include "core/log.hpp"

namespace hcomm::bootstrap {

using namespace store_wire;  // NOLINT: the wire vocabulary is this file's subject
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

/// How long past a GET/WAIT timeout the client waits for the server's TIMEOUT reply before it
/// declares the server hung and drops the connection.
constexpr milliseconds kReplyGrace{5000};
constexpr milliseconds kMinIoTimeout{5000};
constexpr milliseconds kMaxBackoff{500};

/// Milliseconds left until `deadline`, rounded up, clamped to [0, INT_MAX].
int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX));
}

uint32_t wire_timeout(milliseconds t) {
  return static_cast<uint32_t>(std::clamp<int64_t>(t.count(), 0, UINT32_MAX));
}

Status check_key(const std::string& key) {
  if (key.empty()) return Status(HCOMM_ERR_INVALID_ARG, "store key is empty");
  if (key.size() > kMaxKeyBytes) {
    return Status(HCOMM_ERR_INVALID_ARG, "store key of " + std::to_string(key.size()) +
                                             " bytes is above the limit of " +
                                             std::to_string(kMaxKeyBytes));
  }
  return Status();
}

/// One connection attempt, bounded by `deadline`. Returns the connected non-blocking socket, or
/// -1 with *why set.
int try_connect(const sockaddr_in& sa, Clock::time_point deadline, std::string* why) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *why = std::string("socket: ") + strerror(errno);
    return -1;
  }
  int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    do {
      rc = poll(&p, 1, ms_left(deadline));
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) {
      *why = "connection attempt timed out";
      close(fd);
      return -1;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    errno = err;
    rc = err == 0 ? 0 : -1;
  }
  if (rc != 0) {
    *why = strerror(errno);
    close(fd);
    return -1;
  }
  // Connecting to a free local port can connect the socket to itself (TCP simultaneous open).
  sockaddr_in self{};
  sockaddr_in peer{};
  socklen_t ls = sizeof(self);
  socklen_t lp = sizeof(peer);
  getsockname(fd, reinterpret_cast<sockaddr*>(&self), &ls);
  getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &lp);
  if (self.sin_port == peer.sin_port && self.sin_addr.s_addr == peer.sin_addr.s_addr) {
    *why = "Connection refused";
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

}  // namespace

StoreClient::StoreClient(int fd, std::string root, milliseconds io_timeout)
    : fd_(fd), root_(std::move(root)), io_timeout_(io_timeout) {}

StoreClient::~StoreClient() {
  if (fd_ >= 0) close(fd_);
}

Expected<std::unique_ptr<StoreClient>> StoreClient::connect(
    const std::string& host, uint16_t port, milliseconds timeout,
    std::shared_ptr<const core::JobKey> key) {
  const std::string root = host + ":" + std::to_string(port);
  const auto deadline = Clock::now() + std::max(timeout, milliseconds(0));
  const milliseconds io_timeout = std::max(timeout, kMinIoTimeout);
  milliseconds backoff{10};
  std::string last_error = "no attempt made";
  int attempts = 0;
  for (;;) {
    ++attempts;
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int gai = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (gai == 0 && res != nullptr) {
      sockaddr_in sa = *reinterpret_cast<const sockaddr_in*>(res->ai_addr);
      freeaddrinfo(res);
      sa.sin_port = htons(port);
      int fd = try_connect(sa, deadline, &last_error);
      if (fd >= 0) {
        std::unique_ptr<StoreClient> client(new StoreClient(fd, root, io_timeout));
        if (key) {
          Status auth = client->authenticate(std::move(key), deadline);
          if (!auth.ok()) return auth;
        }
        std::string reply;
        Status st = client->exchange(FrameWriter().u8(kHello).u32(kMagic).u32(kVersion).take(),
                                     deadline, &reply);
        if (st.ok()) {
          FrameReader r(reply.data(), reply.size());
          uint8_t code = kError;
          uint32_t version = 0;
          std::string message;
          if (r.u8(&code) && code == kOk && r.u32(&version)) {
            HCOMM_LOG(debug, ::hcomm::core::log::kBoot,
                      "connected to the rendezvous root at %s (attempt %d)", root.c_str(),
                      attempts);
            return client;
          }
          if (code == kError && r.str(&message)) {
            return Status(HCOMM_ERR_TRANSPORT,
                          "the rendezvous root at " + root + " refused this rank: " + message);
          }
          return Status(HCOMM_ERR_TRANSPORT, "the process listening at " + root +
                                                 " is not an hcomm rendezvous store: check "
                                                 "HCOMM_ROOT_ADDR (or MASTER_ADDR/MASTER_PORT)");
        }
        if (client->key_required_) return st;
        if (st.code() == HCOMM_ERR_TIMEOUT) {
          return Status(HCOMM_ERR_TIMEOUT,
                        "connected to " + root + " but no hcomm rendezvous store answered within " +
                            std::to_string(timeout.count()) +
                            " ms: is another service listening on that port? Check "
                            "HCOMM_ROOT_ADDR (or MASTER_ADDR/MASTER_PORT)");
        }
        last_error = st.message();
      }
    } else if (gai == EAI_AGAIN) {
      last_error = std::string("resolving ") + host + ": " + gai_strerror(gai);
    } else {
      if (res != nullptr) freeaddrinfo(res);
      return Status(HCOMM_ERR_INVALID_ARG, "cannot resolve the rendezvous root host '" + host +
                                               "': " + gai_strerror(gai) +
                                               "; check HCOMM_ROOT_ADDR (or MASTER_ADDR)");
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - Clock::now()));
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
  return Status(HCOMM_ERR_TIMEOUT,
                "could not reach the rendezvous root at " + root + " within " +
                    std::to_string(timeout.count()) + " ms (" + std::to_string(attempts) +
                    " attempts, last: " + last_error +
                    "): check HCOMM_ROOT_ADDR (or MASTER_ADDR/MASTER_PORT) and that rank 0 is "
                    "running");
}

Status StoreClient::authenticate(std::shared_ptr<const core::JobKey> key,
                                 Clock::time_point deadline) {
  core::AuthHandshake auth(std::move(key), core::AuthHandshake::Role::connector);
  while (!auth.failed()) {
    std::string& out = auth.output();
    if (!out.empty()) {
      Status st = transfer(Direction::send, out.data(), out.size(), deadline);
      if (!st.ok()) return st;
      out.clear();
    }
    if (auth.done()) return {};
    uint8_t buf[core::AuthHandshake::kGreetingBytes];
    const size_t want = std::min(sizeof(buf), auth.wanted());
    Status st = transfer(Direction::receive, reinterpret_cast<char*>(buf), want, deadline);
    if (!st.ok())
      return fail(Status(st.code(), "the rendezvous root at " + root_ +
                                        (st.code() == HCOMM_ERR_TIMEOUT
                                             ? " did not answer the job-key handshake in time"
                                             : " closed the connection during the job-key "
                                               "handshake") +
                                        ": rank 0 runs with another HCOMM_JOB_KEY, or none"));
    auth.feed(buf, want);
  }
  return fail(Status(HCOMM_ERR_TRANSPORT, "the rendezvous root at " + root_ +
                                              " failed the job-key handshake: " + auth.failure()));
}

Status StoreClient::fail(Status st) {
  if (broken_.ok()) broken_ = st;
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  return st;
}

Status StoreClient::transfer(Direction direction, char* buf, size_t n, Clock::time_point deadline) {
  const bool sending = direction == Direction::send;
  size_t off = 0;
  while (off < n) {
    const ssize_t moved =
        sending ? send(fd_, buf + off, n - off, MSG_NOSIGNAL) : recv(fd_, buf + off, n - off, 0);
    if (moved > 0) {
      off += static_cast<size_t>(moved);
      continue;
    }
    if (moved == 0)
      return fail(Status(HCOMM_ERR_TRANSPORT, "the rendezvous root at " + root_ +
                                                  " closed the connection: is rank 0 still "
                                                  "running?"));
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{fd_, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
      if (poll(&p, 1, ms_left(deadline)) == 0) {
        fail(Status(HCOMM_ERR_TRANSPORT,
                    "the connection to the rendezvous root at " + root_ + " was dropped after " +
                        (sending ? "a send timed out" : "a reply did not come in time")));
        return Status(HCOMM_ERR_TIMEOUT, "the rendezvous root at " + root_ + " did not " +
                                             (sending ? "accept a request" : "answer") +
                                             " in time");
      }
      continue;
    }
    return fail(Status(HCOMM_ERR_TRANSPORT, "lost the connection to the rendezvous root at " +
                                                root_ + " (" + strerror(errno) +
                                                "): is rank 0 still running?"));
  }
  return Status();
}

Status StoreClient::exchange(const std::string& request, Clock::time_point deadline,
                             std::string* reply) {
  if (!broken_.ok()) return broken_;
  if (request.size() - 4 > kMaxFrameBytes) {
    return Status(HCOMM_ERR_INVALID_ARG, "store request of " + std::to_string(request.size()) +
                                             " bytes is above the limit of " +
                                             std::to_string(kMaxFrameBytes));
  }
  Status st =
      transfer(Direction::send, const_cast<char*>(request.data()), request.size(), deadline);
  if (!st.ok()) return st;
  char header[4];
  st = transfer(Direction::receive, header, sizeof(header), deadline);
  if (!st.ok()) return st;
  uint32_t len = load_u32(header);
  if (core::AuthHandshake::is_greeting(reinterpret_cast<const uint8_t*>(header))) {
    key_required_ = true;
    return fail(Status(HCOMM_ERR_TRANSPORT,
                       "the rendezvous root at " + root_ +
                           " requires a job key and this rank has none: set HCOMM_JOB_KEY (or "
                           "HCOMM_JOB_KEY_FILE) to the job's secret"));
  }
  if (len == 0 || len > kMaxFrameBytes) {
    return fail(Status(HCOMM_ERR_TRANSPORT, "malformed reply (" + std::to_string(len) +
                                                " bytes) from the rendezvous root at " + root_));
  }
  reply->resize(len);
  return transfer(Direction::receive, &(*reply)[0], len, deadline);
}

Status StoreClient::set(const std::string& key, const std::string& value) {
  Status st = check_key(key);
  if (!st.ok()) return st;
  if (value.size() > kMaxValueBytes) {
    return Status(HCOMM_ERR_INVALID_ARG, "store value of " + std::to_string(value.size()) +
                                             " bytes for key '" + printable_key(key) +
                                             "' is above the limit of " +
                                             std::to_string(kMaxValueBytes) + " (16 MiB)");
  }
  std::string reply;
  st = exchange(FrameWriter().u8(kSet).str(key).str(value).take(), Clock::now() + io_timeout_,
                &reply);
  if (!st.ok()) return st;
  FrameReader r(reply.data(), reply.size());
  uint8_t code = kError;
  std::string message;
  if (r.u8(&code) && code == kOk && r.left() == 0) return Status();
  if (code == kError && r.str(&message)) {
    return Status(HCOMM_ERR_INVALID_ARG, "the rendezvous root at " + root_ + " refused to set '" +
                                             printable_key(key) + "': " + message);
  }
  return fail(
      Status(HCOMM_ERR_TRANSPORT, "malformed SET reply from the rendezvous root at " + root_));
}

Expected<std::string> StoreClient::get(const std::string& key, milliseconds timeout) {
  Status st = check_key(key);
  if (!st.ok()) return st;
  timeout = std::max(timeout, milliseconds(0));
  std::string reply;
  st = exchange(FrameWriter().u8(kGet).u32(wire_timeout(timeout)).str(key).take(),
                Clock::now() + timeout + kReplyGrace, &reply);
  if (!st.ok()) return st;
  FrameReader r(reply.data(), reply.size());
  uint8_t code = kError;
  std::string text;
  if (r.u8(&code) && code == kOk && r.str(&text) && r.left() == 0) return text;
  if (code == kTimeout && r.left() == 0) {
    return Status(HCOMM_ERR_TIMEOUT, "key '" + printable_key(key) +
                                         "' was not set at the rendezvous root " + root_ +
                                         " within " + std::to_string(timeout.count()) +
                                         " ms: the rank that publishes it may have failed or "
                                         "not started");
  }
  if (code == kError && r.str(&text)) {
    return Status(HCOMM_ERR_INVALID_ARG, "the rendezvous root at " + root_ + " refused to get '" +
                                             printable_key(key) + "': " + text);
  }
  return fail(
      Status(HCOMM_ERR_TRANSPORT, "malformed GET reply from the rendezvous root at " + root_));
}

Status StoreClient::wait(const std::vector<std::string>& keys, milliseconds timeout,
                         std::vector<std::string>* missing) {
  if (missing != nullptr) missing->clear();
  FrameWriter w;
  timeout = std::max(timeout, milliseconds(0));
  w.u8(kWait).u32(wire_timeout(timeout)).u32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) {
    Status st = check_key(k);
    if (!st.ok()) return st;
    w.str(k);
  }
  std::string reply;
  Status st = exchange(w.take(), Clock::now() + timeout + kReplyGrace, &reply);
  if (!st.ok()) return st;
  FrameReader r(reply.data(), reply.size());
  uint8_t code = kError;
  std::string text;
  if (r.u8(&code) && code == kOk && r.left() == 0) return Status();
  if (code == kTimeout) {
    uint32_t count = 0;
    std::vector<std::string> absent;
    bool ok = r.u32(&count);
    for (uint32_t i = 0; ok && i < count; ++i) {
      ok = r.str(&text);
      if (ok) absent.push_back(text);
    }
    if (ok && r.left() == 0) {
      std::string names;
      for (size_t i = 0; i < absent.size() && i < 8; ++i) {
        names += (i == 0 ? "'" : ", '") + printable_key(absent[i]) + "'";
      }
      if (absent.size() > 8) names += ", ...";
      if (missing != nullptr) *missing = std::move(absent);
      return Status(HCOMM_ERR_TIMEOUT,
                    std::to_string(count) + " of " + std::to_string(keys.size()) +
                        " keys were still missing at the rendezvous root " + root_ + " after " +
                        std::to_string(timeout.count()) + " ms (" + names +
                        "): the ranks that publish them may have failed or not started");
    }
  }
  if (code == kError && r.str(&text)) {
    return Status(HCOMM_ERR_INVALID_ARG,
                  "the rendezvous root at " + root_ + " refused a wait: " + text);
  }
  return fail(
      Status(HCOMM_ERR_TRANSPORT, "malformed WAIT reply from the rendezvous root at " + root_));
}

Expected<int64_t> StoreClient::add(const std::string& key, int64_t delta) {
  Status st = check_key(key);
  if (!st.ok()) return st;
  std::string reply;
  st = exchange(FrameWriter().u8(kAdd).str(key).u64(static_cast<uint64_t>(delta)).take(),
                Clock::now() + io_timeout_, &reply);
  if (!st.ok()) return st;
  FrameReader r(reply.data(), reply.size());
  uint8_t code = kError;
  uint64_t value = 0;
  std::string text;
  if (r.u8(&code) && code == kOk && r.u64(&value) && r.left() == 0) {
    return static_cast<int64_t>(value);
  }
  if (code == kError && r.str(&text)) {
    return Status(HCOMM_ERR_INVALID_ARG, "the rendezvous root at " + root_ +
                                             " refused to add to '" + printable_key(key) +
                                             "': " + text);
  }
  return fail(
      Status(HCOMM_ERR_TRANSPORT, "malformed ADD reply from the rendezvous root at " + root_));
}

Expected<int64_t> StoreClient::clock_offset_ns(int rounds, int64_t* uncertainty_ns) {
  using std::chrono::duration_cast;
  using std::chrono::nanoseconds;
  int64_t best_rtt = INT64_MAX;
  int64_t best_offset = 0;
  for (int i = 0; i < rounds; ++i) {
    std::string reply;
    const auto t0 = Clock::now();
    Status st = exchange(FrameWriter().u8(kTime).take(), t0 + io_timeout_, &reply);
    const auto t1 = Clock::now();
    if (!st.ok()) return st;
    FrameReader r(reply.data(), reply.size());
    uint8_t code = kError;
    uint64_t server = 0;
    if (!r.u8(&code) || code != kOk || !r.u64(&server) || r.left() != 0)
      return Status(HCOMM_ERR_TRANSPORT,
                    "the rendezvous root at " + root_ + " does not tell its clock (TIME)");
    const int64_t rtt = duration_cast<nanoseconds>(t1 - t0).count();
    if (rtt >= best_rtt) continue;
    best_rtt = rtt;
    const int64_t mid = duration_cast<nanoseconds>(t0.time_since_epoch()).count() + rtt / 2;
    best_offset = static_cast<int64_t>(server) - mid;
  }
  if (uncertainty_ns != nullptr) *uncertainty_ns = best_rtt / 2;
  return best_offset;
}

}  // namespace hcomm::bootstrap
