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
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>

#include "bootstrap/store_server_impl.hpp"
#include "bootstrap/store_wire.hpp"
#include "core/config_vars.hpp"
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

}  // namespace

StoreServer::Impl::Impl(StoreServerOptions o) : options(std::move(o)) {}

StoreServer::Impl::~Impl() {
  if (listen_fd >= 0) close(listen_fd);
  if (epoll_fd >= 0) close(epoll_fd);
  if (wake_fd >= 0) close(wake_fd);
}

void StoreServer::Impl::run() {
  std::vector<epoll_event> events(64);
  while (!stop.load()) {
    int wait_ms = -1;
    for (const auto* t : {&timers, &greet_timers}) {
      if (t->empty()) continue;
      auto left = std::chrono::ceil<std::chrono::milliseconds>(t->begin()->first - Clock::now());
      const int ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
      wait_ms = wait_ms < 0 ? ms : std::min(wait_ms, ms);
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
    expire_greetings(Clock::now());
    drain_runnable();
    sweep();
    open_connections.store(conns.size(), std::memory_order_relaxed);
  }
  for (auto& [id, c] : conns) close(c.fd);
  conns.clear();
}

void StoreServer::Impl::accept_all() {
  for (;;) {
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    int fd =
        accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
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
    if (greet_timers.size() >= options.max_greeting) {
      core::log_refused_connection(
          "rendezvous store", sockaddr_text(peer),
          std::to_string(greet_timers.size()) + " connections are still greeting (a flood?)");
      close(fd);
      continue;
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
    c.greet_deadline = Clock::now() + options.greeting_timeout;
    greet_timers.emplace(c.greet_deadline, id);
    if (options.key) {
      c.auth =
          std::make_unique<core::AuthHandshake>(options.key, core::AuthHandshake::Role::acceptor);
      send_bytes(c, std::move(c.auth->output()));
      c.auth->output().clear();
    }
    HCOMM_LOG(debug, ::hcomm::core::log::kBoot, "rendezvous store %s: client %s connected",
              addr.c_str(), c.peer.c_str());
  }
}

void StoreServer::Impl::on_readable(uint64_t id, Conn& c) {
  if (c.auth && !authenticate(c)) return;
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

bool StoreServer::Impl::authenticate(Conn& c) {
  while (!c.auth->done()) {
    uint8_t buf[core::AuthHandshake::kGreetingBytes];
    ssize_t r = recv(c.fd, buf, std::min(sizeof(buf), c.auth->wanted()), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (r <= 0) {
      core::log_refused_connection("rendezvous store", c.peer, "it left before authenticating");
      c.dead = true;
      return false;
    }
    c.auth->feed(buf, static_cast<size_t>(r));
    if (c.auth->failed()) {
      core::log_refused_connection("rendezvous store", c.peer, c.auth->failure());
      c.dead = true;
      return false;
    }
    send_bytes(c, std::move(c.auth->output()));
    c.auth->output().clear();
  }
  c.auth.reset();
  return true;
}

void StoreServer::Impl::process_input(uint64_t id, Conn& c) {
  while (!c.parked && !c.dead && !c.closing) {
    const char* next = c.in.data() + c.in_off;
    const FrameCut cut = cut_frame(next, c.in.size() - c.in_off, c.greeted);
    if (cut.kind == FrameCut::Kind::need_more) break;
    if (cut.kind == FrameCut::Kind::oversized_hello) {
      protocol_error(c, core::AuthHandshake::is_greeting(reinterpret_cast<const uint8_t*>(next))
                            ? "authenticates with a job key, and this store has none: give "
                              "rank 0 the same HCOMM_JOB_KEY"
                            : "is not an hcomm store client (no HELLO)");
      break;
    }
    if (cut.kind == FrameCut::Kind::oversized) {
      protocol_error(c, "sent a frame of " + std::to_string(cut.length) +
                            " bytes, above the limit of " + std::to_string(kMaxFrameBytes));
      break;
    }
    c.in_off += 4 + size_t{cut.length};
    handle(id, c, next + 4, cut.length);
  }
  if (c.in_off == c.in.size()) {
    c.in.clear();
    c.in_off = 0;
  } else if (c.in_off > (size_t{1} << 20)) {
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(c.in_off));
    c.in_off = 0;
  }
}

void StoreServer::Impl::expire_greetings(Clock::time_point now) {
  while (!greet_timers.empty() && greet_timers.begin()->first <= now) {
    auto it = conns.find(greet_timers.begin()->second);
    greet_timers.erase(greet_timers.begin());
    if (it == conns.end() || it->second.dead) continue;
    core::log_refused_connection(
        "rendezvous store", it->second.peer,
        "it did not " + std::string(it->second.auth ? "authenticate" : "greet") + " within " +
            std::to_string(options.greeting_timeout.count()) + " ms");
    it->second.dead = true;
  }
}

void StoreServer::Impl::drain_runnable() {
  while (!runnable.empty()) {
    uint64_t id = runnable.front();
    runnable.pop_front();
    auto it = conns.find(id);
    if (it != conns.end()) process_input(id, it->second);
  }
}

void StoreServer::Impl::sweep() {
  for (auto it = conns.begin(); it != conns.end();) {
    Conn& c = it->second;
    if (!c.dead) {
      ++it;
      continue;
    }
    if (c.parked) unpark(it->first, c);
    if (!c.greeted) greet_timers.erase({c.greet_deadline, it->first});
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

void StoreServer::Impl::reply_error(Conn& c, const std::string& message) {
  HCOMM_LOG(warn, ::hcomm::core::log::kBoot, "rendezvous store %s: refused a request of %s: %s",
            addr.c_str(), c.peer.c_str(), message.c_str());
  send_frame(c, FrameWriter().u8(kError).str(message).take());
}

void StoreServer::Impl::protocol_error(Conn& c, const std::string& what) {
  HCOMM_LOG(warn, ::hcomm::core::log::kBoot,
            "rendezvous store %s: closing the connection of %s: it %s", addr.c_str(),
            c.peer.c_str(), what.c_str());
  c.dead = true;
}

void StoreServer::Impl::send_frame(Conn& c, std::string frame) {
  send_bytes(c, std::move(frame));
}

void StoreServer::Impl::send_bytes(Conn& c, std::string frame) {
  if (c.dead) return;
  if (c.out_off == c.out.size()) {
    c.out = std::move(frame);
    c.out_off = 0;
  } else {
    c.out.append(frame);
  }
  flush(c);
}

void StoreServer::Impl::flush(Conn& c) {
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

Expected<StoreServerOptions> StoreServerOptions::from_environment() {
  StoreServerOptions o;
  auto key = core::JobKey::from_environment();
  if (!key.ok()) return key.status();
  o.key = key.value();
  if (auto text = core::env_text(core::Var::store_max_bytes)) {
    auto bytes = core::parse_bytes_var(core::config_var(core::Var::store_max_bytes), *text);
    if (!bytes.ok()) return bytes.status();
    o.limits.max_bytes = bytes.value();
  }
  return o;
}

StoreServer::StoreServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StoreServer::~StoreServer() {
  impl_->stop.store(true);
  uint64_t one = 1;
  ssize_t r = write(impl_->wake_fd, &one, sizeof(one));
  (void)r;
  if (impl_->thread.joinable()) impl_->thread.join();
  HCOMM_LOG(info, ::hcomm::core::log::kBoot, "rendezvous store %s stopped", impl_->addr.c_str());
}

size_t StoreServer::clients() const {
  return impl_->open_connections.load(std::memory_order_relaxed);
}

uint16_t StoreServer::port() const {
  return impl_->port;
}

Expected<std::unique_ptr<StoreServer>> StoreServer::start(const std::string& bind_host,
                                                          uint16_t port,
                                                          StoreServerOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
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
