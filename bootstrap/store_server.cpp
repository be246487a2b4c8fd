#include "bootstrap/store_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <deque>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/log.hpp"

namespace hcomm::bootstrap {

using namespace store_wire;  // NOLINT: the wire vocabulary is this file's subject
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
constexpr size_t kReadChunk = 64 * 1024;

std::string errno_text(int err) {
  return std::string(strerror(err));
}

std::string sockaddr_text(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
  return std::string(buf) + ":" + std::to_string(ntohs(a.sin_port));
}

/// Decimal value of a counter; false when `s` is not one.
bool parse_counter(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t j = i; j < s.size(); ++j) {
    if (s[j] < '0' || s[j] > '9') return false;
  }
  errno = 0;
  char* end = nullptr;
  long long v = strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace

struct StoreServer::Impl {
  /// One client connection. Owned by `conns`; only the serving thread touches it.
  struct Conn {
    uint64_t id = 0;  ///< key in conns, and the epoll cookie
    int fd = -1;
    std::string peer;      ///< "ip:port" of the client, for log lines
    std::vector<char> in;  ///< received bytes; in[in_off..] not consumed yet
    size_t in_off = 0;
    std::string out;  ///< reply bytes; out[out_off..] not sent yet
    size_t out_off = 0;
    bool want_write = false;  ///< EPOLLOUT is registered
    bool closing = false;     ///< close once `out` is flushed (after a protocol error)
    bool dead = false;        ///< close at the end of this loop turn
    bool greeted = false;     ///< HELLO received
    // The parked request, when `parked`.
    bool parked = false;
    uint8_t op = 0;
    std::vector<std::string> keys;  ///< GET: its key; WAIT: the keys absent when it was parked
    size_t remaining = 0;           ///< keys of `keys` not set yet
    Clock::time_point deadline;
  };

  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  uint16_t port = 0;
  std::string addr;  ///< "host:port" it listens on, for messages
  std::atomic<bool> stop{false};
  std::thread thread;

  // Serving-thread state.
  uint64_t next_id = 2;
  bool listen_paused = false;  ///< out of file descriptors: accepting resumes when one closes
  std::unordered_map<uint64_t, Conn> conns;
  std::unordered_map<std::string, std::string> data;
  std::unordered_map<std::string, std::vector<uint64_t>> waiters;  ///< key -> parked conn ids
  std::set<std::pair<Clock::time_point, uint64_t>> timers;         ///< parked deadlines
  std::deque<uint64_t> runnable;  ///< unparked conns whose buffered input must be processed

  ~Impl() {
    if (listen_fd >= 0) close(listen_fd);
    if (epoll_fd >= 0) close(epoll_fd);
    if (wake_fd >= 0) close(wake_fd);
  }

  void run() {
    std::vector<epoll_event> events(64);
    while (!stop.load()) {
      int wait_ms = -1;
      if (!timers.empty()) {
        auto left =
            std::chrono::ceil<std::chrono::milliseconds>(timers.begin()->first - Clock::now());
        wait_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
      }
      int n = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), wait_ms);
      if (n < 0) {
        if (errno == EINTR) continue;
        HCOMM_LOG(error, ::hcomm::core::log::kBoot, "rendezvous store %s: epoll_wait failed: %s",
                  addr.c_str(), errno_text(errno).c_str());
        break;
      }
      for (int i = 0; i < n; ++i) {
        uint64_t id = events[i].data.u64;
        if (id == kListenId) {
          accept_all();
        } else if (id == kWakeId) {
          uint64_t v = 0;
          ssize_t r = read(wake_fd, &v, sizeof(v));
          (void)r;
        } else {
          auto it = conns.find(id);
          if (it == conns.end() || it->second.dead) continue;
          if (events[i].events & EPOLLOUT) flush(it->second);
          if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(id, it->second);
        }
      }
      expire(Clock::now());
      drain_runnable();
      sweep();
    }
    for (auto& [id, c] : conns) close(c.fd);
    conns.clear();
  }

  void accept_all() {
    for (;;) {
      sockaddr_in peer{};
      socklen_t len = sizeof(peer);
      int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE) {
          HCOMM_LOG(warn, ::hcomm::core::log::kBoot,
                    "rendezvous store %s: out of file descriptors with %zu clients; raise "
                    "`ulimit -n`. Accepting again when a client leaves",
                    addr.c_str(), conns.size());
          epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
          listen_paused = true;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
          HCOMM_LOG(warn, ::hcomm::core::log::kBoot, "rendezvous store %s: accept failed: %s",
                    addr.c_str(), errno_text(errno).c_str());
        }
        return;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      uint64_t id = next_id++;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = id;
      if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(fd);
        continue;
      }
      Conn& c = conns[id];
      c.id = id;
      c.fd = fd;
      c.peer = sockaddr_text(peer);
      HCOMM_LOG(debug, ::hcomm::core::log::kBoot, "rendezvous store %s: client %s connected",
                addr.c_str(), c.peer.c_str());
    }
  }

  void on_readable(uint64_t id, Conn& c) {
    for (;;) {
      size_t old = c.in.size();
      c.in.resize(old + kReadChunk);
      ssize_t r = recv(c.fd, c.in.data() + old, kReadChunk, 0);
      c.in.resize(old + static_cast<size_t>(std::max<ssize_t>(r, 0)));
      if (r > 0) continue;
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      // EOF or a reset: the client is gone, whatever it was waiting for.
      HCOMM_LOG(debug, ::hcomm::core::log::kBoot, "rendezvous store %s: client %s left%s",
                addr.c_str(), c.peer.c_str(), c.parked ? " while waiting" : "");
      c.dead = true;
      return;
    }
    if (c.parked && c.in.size() - c.in_off > kMaxFrameBytes + 4) {
      return protocol_error(c, "sent more than a frame while its request was pending");
    }
    process_input(id, c);
  }

  /// Serves the complete frames buffered on `c` until it is parked or the buffer runs out.
  void process_input(uint64_t id, Conn& c) {
    while (!c.parked && !c.dead && !c.closing) {
      size_t avail = c.in.size() - c.in_off;
      if (avail < 4) break;
      uint32_t len = load_u32(c.in.data() + c.in_off);
      if (len > kMaxFrameBytes) {
        protocol_error(c, "sent a frame of " + std::to_string(len) + " bytes, above the limit of " +
                              std::to_string(kMaxFrameBytes));
        break;
      }
      if (avail < 4 + size_t{len}) break;
      const char* body = c.in.data() + c.in_off + 4;
      c.in_off += 4 + size_t{len};
      handle(id, c, body, len);
    }
    if (c.in_off == c.in.size()) {
      c.in.clear();
      c.in_off = 0;
    } else if (c.in_off > (size_t{1} << 20)) {
      c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(c.in_off));
      c.in_off = 0;
    }
  }

  void handle(uint64_t id, Conn& c, const char* body, uint32_t len) {
    FrameReader r(body, len);
    uint8_t op = 0;
    if (!r.u8(&op)) return protocol_error(c, "sent an empty frame");
    if (!c.greeted) {
      uint32_t magic = 0;
      uint32_t version = 0;
      if (op != kHello || !r.u32(&magic) || !r.u32(&version) || magic != kMagic) {
        return protocol_error(c, "is not an hcomm store client (no HELLO)");
      }
      if (version != kVersion) {
        reply_error(c, "store protocol version " + std::to_string(version) +
                           " is not supported; this root speaks version " +
                           std::to_string(kVersion) + ": run the same hcomm on every rank");
        c.closing = true;
        return flush(c);
      }
      c.greeted = true;
      return send_frame(c, FrameWriter().u8(kOk).u32(kVersion).take());
    }
    std::string key;
    switch (op) {
      case kSet: {
        std::string value;
        if (!r.str(&key) || !r.str(&value) || r.left() != 0) break;
        if (!check_key(c, key)) return;
        if (value.size() > kMaxValueBytes) {
          return reply_error(c, "value of " + std::to_string(value.size()) +
                                    " bytes is above the limit of " +
                                    std::to_string(kMaxValueBytes));
        }
        data[key] = std::move(value);
        send_frame(c, FrameWriter().u8(kOk).take());
        return wake(key);
      }
      case kGet: {
        uint32_t timeout_ms = 0;
        if (!r.u32(&timeout_ms) || !r.str(&key) || r.left() != 0) break;
        if (!check_key(c, key)) return;
        auto it = data.find(key);
        if (it != data.end()) return send_frame(c, FrameWriter().u8(kOk).str(it->second).take());
        if (timeout_ms == 0) return send_frame(c, FrameWriter().u8(kTimeout).take());
        return park(id, c, kGet, {key}, timeout_ms);
      }
      case kAdd: {
        uint64_t delta = 0;
        if (!r.str(&key) || !r.u64(&delta) || r.left() != 0) break;
        if (!check_key(c, key)) return;
        int64_t current = 0;
        auto it = data.find(key);
        if (it != data.end() && !parse_counter(it->second, &current)) {
          return reply_error(c, "key '" + printable_key(key) +
                                    "' holds a value that is not a counter; ADD needs a decimal "
                                    "integer");
        }
        int64_t next = 0;
        if (__builtin_add_overflow(current, static_cast<int64_t>(delta), &next)) {
          return reply_error(c, "counter '" + printable_key(key) + "' would overflow");
        }
        data[key] = std::to_string(next);
        send_frame(c, FrameWriter().u8(kOk).u64(static_cast<uint64_t>(next)).take());
        return wake(key);
      }
      case kWait: {
        uint32_t timeout_ms = 0;
        uint32_t count = 0;
        if (!r.u32(&timeout_ms) || !r.u32(&count)) break;
        std::vector<std::string> absent;
        std::unordered_set<std::string> seen;
        bool ok = true;
        for (uint32_t i = 0; i < count && ok; ++i) {
          ok = r.str(&key);
          if (ok && !check_key(c, key)) return;
          if (ok && data.count(key) == 0 && seen.insert(key).second) absent.push_back(key);
        }
        if (!ok || r.left() != 0) break;
        if (absent.empty()) return send_frame(c, FrameWriter().u8(kOk).take());
        if (timeout_ms == 0) return send_frame(c, wait_timeout_reply(absent));
        return park(id, c, kWait, std::move(absent), timeout_ms);
      }
      default:
        return protocol_error(c, "sent unknown request " + std::to_string(op));
    }
    protocol_error(c, "sent a malformed request " + std::to_string(op));
  }

  bool check_key(Conn& c, const std::string& key) {
    if (key.size() <= kMaxKeyBytes) return true;
    reply_error(c, "key of " + std::to_string(key.size()) + " bytes is above the limit of " +
                       std::to_string(kMaxKeyBytes));
    return false;
  }

  std::string wait_timeout_reply(const std::vector<std::string>& keys) {
    FrameWriter w;
    w.u8(kTimeout);
    std::vector<const std::string*> absent;
    for (const auto& k : keys) {
      if (data.count(k) == 0) absent.push_back(&k);
    }
    w.u32(static_cast<uint32_t>(absent.size()));
    for (const auto* k : absent) w.str(*k);
    return w.take();
  }

  void park(uint64_t id, Conn& c, uint8_t op, std::vector<std::string> keys, uint32_t timeout_ms) {
    c.parked = true;
    c.op = op;
    c.keys = std::move(keys);
    c.remaining = c.keys.size();
    c.deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    timers.emplace(c.deadline, id);
    for (const auto& k : c.keys) waiters[k].push_back(id);
  }

  /// Leaves the parked state and drops every registration still pointing at `id`.
  void unpark(uint64_t id, Conn& c) {
    timers.erase({c.deadline, id});
    for (const auto& k : c.keys) {
      auto it = waiters.find(k);
      if (it == waiters.end()) continue;
      auto& ids = it->second;
      ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
      if (ids.empty()) waiters.erase(it);
    }
    c.parked = false;
    c.keys.clear();
    c.remaining = 0;
    runnable.push_back(id);
  }

  /// `key` was set: answers the parked requests that were waiting for it alone or for it last.
  void wake(const std::string& key) {
    auto it = waiters.find(key);
    if (it == waiters.end()) return;
    std::vector<uint64_t> ids = std::move(it->second);
    waiters.erase(it);
    for (uint64_t id : ids) {
      auto cit = conns.find(id);
      if (cit == conns.end() || !cit->second.parked) continue;
      Conn& c = cit->second;
      if (--c.remaining > 0) continue;
      if (c.op == kGet) {
        send_frame(c, FrameWriter().u8(kOk).str(data[c.keys.front()]).take());
      } else {
        send_frame(c, FrameWriter().u8(kOk).take());
      }
      unpark(id, c);
    }
  }

  void expire(Clock::time_point now) {
    while (!timers.empty() && timers.begin()->first <= now) {
      uint64_t id = timers.begin()->second;
      timers.erase(timers.begin());
      auto it = conns.find(id);
      if (it == conns.end() || !it->second.parked) continue;
      Conn& c = it->second;
      if (c.op == kGet) {
        send_frame(c, FrameWriter().u8(kTimeout).take());
      } else {
        send_frame(c, wait_timeout_reply(c.keys));
      }
      unpark(id, c);
    }
  }

  void drain_runnable() {
    while (!runnable.empty()) {
      uint64_t id = runnable.front();
      runnable.pop_front();
      auto it = conns.find(id);
      if (it != conns.end()) process_input(id, it->second);
    }
  }

  /// Closes the connections marked dead this turn.
  void sweep() {
    for (auto it = conns.begin(); it != conns.end();) {
      Conn& c = it->second;
      if (!c.dead) {
        ++it;
        continue;
      }
      if (c.parked) unpark(it->first, c);
      close(c.fd);
      it = conns.erase(it);
      if (listen_paused) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = kListenId;
        listen_paused = epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev) != 0;
      }
    }
    runnable.clear();
  }

  void reply_error(Conn& c, const std::string& message) {
    HCOMM_LOG(warn, ::hcomm::core::log::kBoot, "rendezvous store %s: refused a request of %s: %s",
              addr.c_str(), c.peer.c_str(), message.c_str());
    send_frame(c, FrameWriter().u8(kError).str(message).take());
  }

  void protocol_error(Conn& c, const std::string& what) {
    HCOMM_LOG(warn, ::hcomm::core::log::kBoot,
              "rendezvous store %s: closing the connection of %s: it %s", addr.c_str(),
              c.peer.c_str(), what.c_str());
    c.dead = true;
  }

  void send_frame(Conn& c, std::string frame) {
    if (c.dead) return;
    if (c.out_off == c.out.size()) {
      c.out = std::move(frame);
      c.out_off = 0;
    } else {
      c.out.append(frame);
    }
    flush(c);
  }

  /// Writes what it can of `c.out`; registers for EPOLLOUT while something is left.
  void flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      ssize_t w = send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (w > 0) {
        c.out_off += static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      c.dead = true;
      return;
    }
    bool pending = c.out_off < c.out.size();
    if (!pending) {
      c.out.clear();
      c.out_off = 0;
      if (c.closing) c.dead = true;
    }
    if (pending != c.want_write && !c.dead) {
      epoll_event ev{};
      ev.events = EPOLLIN | (pending ? EPOLLOUT : 0u);
      ev.data.u64 = c.id;
      epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
      c.want_write = pending;
    }
  }
};

StoreServer::StoreServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StoreServer::~StoreServer() {
  impl_->stop.store(true);
  uint64_t one = 1;
  ssize_t r = write(impl_->wake_fd, &one, sizeof(one));
  (void)r;
  if (impl_->thread.joinable()) impl_->thread.join();
  HCOMM_LOG(info, ::hcomm::core::log::kBoot, "rendezvous store %s stopped", impl_->addr.c_str());
}

uint16_t StoreServer::port() const {
  return impl_->port;
}

Expected<std::unique_ptr<StoreServer>> StoreServer::start(const std::string& bind_host,
                                                          uint16_t port) {
  auto impl = std::make_unique<Impl>();
  std::string shown = (bind_host.empty() ? "0.0.0.0" : bind_host) + ":" + std::to_string(port);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (bind_host.empty()) {
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (inet_pton(AF_INET, bind_host.c_str(), &sa.sin_addr) != 1) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(bind_host.c_str(), nullptr, &hints, &res);
    if (rc != 0 || res == nullptr) {
      return Status(HCOMM_ERR_INVALID_ARG, "rendezvous store: cannot resolve '" + bind_host +
                                               "' to an IPv4 address: " + gai_strerror(rc));
    }
    sa.sin_addr = reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr;
    freeaddrinfo(res);
  }

  impl->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (impl->listen_fd < 0) {
    return Status(HCOMM_ERR_TRANSPORT,
                  "rendezvous store: cannot create a socket: " + errno_text(errno));
  }
  int one = 1;
  setsockopt(impl->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(impl->listen_fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    int err = errno;
    if (err == EADDRINUSE) {
      return Status(HCOMM_ERR_TRANSPORT,
                    "rendezvous store: cannot listen on " + shown +
                        ": the address is already in use (another job, or a previous run that "
                        "has not exited). Choose another port in HCOMM_ROOT_ADDR (or MASTER_PORT)");
    }
    if (err == EADDRNOTAVAIL) {
      return Status(HCOMM_ERR_INVALID_ARG,
                    "rendezvous store: cannot listen on " + shown + ": " + bind_host +
                        " is not an address of this host. Rank 0 must run on the host that "
                        "HCOMM_ROOT_ADDR (or MASTER_ADDR) names");
    }
    return Status(HCOMM_ERR_TRANSPORT,
                  "rendezvous store: cannot listen on " + shown + ": " + errno_text(err));
  }
  if (listen(impl->listen_fd, SOMAXCONN) != 0) {
    return Status(HCOMM_ERR_TRANSPORT,
                  "rendezvous store: listen on " + shown + " failed: " + errno_text(errno));
  }
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
  impl->port = ntohs(bound.sin_port);
  impl->addr = (bind_host.empty() ? "0.0.0.0" : bind_host) + ":" + std::to_string(impl->port);

  impl->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  impl->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->wake_fd < 0) {
    return Status(HCOMM_ERR_TRANSPORT,
                  "rendezvous store: cannot create epoll/eventfd: " + errno_text(errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, impl->listen_fd, &ev);
  ev.data.u64 = kWakeId;
  epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, impl->wake_fd, &ev);

  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->run(); });
  HCOMM_LOG(info, ::hcomm::core::log::kBoot, "rendezvous store listening on %s", raw->addr.c_str());
  return std::unique_ptr<StoreServer>(new StoreServer(std::move(impl)));
}

}  // namespace hcomm::bootstrap
