// Bootstrap, inside the store server: the serving thread's state and its two halves,
// store_server.cpp (sockets: accepting, the job-key handshake and greeting deadlines, reading
// frames, writing replies) and store_requests.cpp (what each request does: the table, parked
// GET/WAIT requests and their deadlines). Included by those two files alone.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bootstrap/store_server.hpp"
#include "bootstrap/store_table.hpp"
#include "core/auth_handshake.hpp"

namespace hcomm::bootstrap {

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
    /// Running while the client has not proven it holds the job's key (null: no key, or done).
    std::unique_ptr<core::AuthHandshake> auth;
    std::chrono::steady_clock::time_point greet_deadline;  ///< closed unless greeted by then
    // The parked request, when `parked`.
    bool parked = false;
    uint8_t op = 0;
    std::vector<std::string> keys;  ///< GET: its key; WAIT: the keys absent when it was parked
    size_t remaining = 0;           ///< keys of `keys` not set yet
    std::chrono::steady_clock::time_point deadline;
  };

  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  uint16_t port = 0;
  std::string addr;  ///< "host:port" it listens on, for messages
  std::atomic<bool> stop{false};
  std::thread thread;
  /// How many client connections are open (conns.size() after each pass): for clients().
  std::atomic<size_t> open_connections{0};

  // Serving-thread state.
  uint64_t next_id = 2;
  bool listen_paused = false;  ///< out of file descriptors: accepting resumes when one closes
  std::unordered_map<uint64_t, Conn> conns;
  StoreServerOptions options;
  StoreTable data{options.limits};
  std::unordered_map<std::string, std::vector<uint64_t>> waiters;  ///< key -> parked conn ids
  std::set<std::pair<std::chrono::steady_clock::time_point, uint64_t>>
      timers;  ///< parked deadlines
  std::set<std::pair<std::chrono::steady_clock::time_point, uint64_t>>
      greet_timers;               ///< greeting deadlines
  std::deque<uint64_t> runnable;  ///< unparked conns whose buffered input must be processed

  explicit Impl(StoreServerOptions o);
  ~Impl();
  void run();

  void accept_all();
  void on_readable(uint64_t id, Conn& c);

  /// Runs the handshake on the bytes `c` sent, reading no more than it wants. True once it is
  /// done (the rest of the input is the store protocol); false while it runs or when it failed
  /// (then `c` is dead).
  bool authenticate(Conn& c);

  /// Serves the complete frames buffered on `c` until it is parked or the buffer runs out.
  void process_input(uint64_t id, Conn& c);
  /// Serves one frame's request (decoded by store_wire.hpp's decode_request).
  void handle(uint64_t id, Conn& c, const char* body, uint32_t len);

  std::string wait_timeout_reply(const std::vector<std::string>& keys);

  void park(uint64_t id, Conn& c, uint8_t op, std::vector<std::string> keys, uint32_t timeout_ms);

  /// Leaves the parked state and drops every registration still pointing at `id`.
  void unpark(uint64_t id, Conn& c);

  /// `key` was set: answers the parked requests that were waiting for it alone or for it last.
  void wake(const std::string& key);

  /// Answers TIMEOUT to the parked requests whose deadline passed.
  void expire(std::chrono::steady_clock::time_point now);

  /// Closes the connections whose greeting deadline passed.
  void expire_greetings(std::chrono::steady_clock::time_point now);
  void drain_runnable();

  /// Closes the connections marked dead this turn.
  void sweep();
  void reply_error(Conn& c, const std::string& message);

  void protocol_error(Conn& c, const std::string& what);
  void send_frame(Conn& c, std::string frame);

  void send_bytes(Conn& c, std::string frame);

  /// Writes what it can of `c.out`; registers for EPOLLOUT while something is left.
  void flush(Conn& c);
};

}  // namespace hcomm::bootstrap
