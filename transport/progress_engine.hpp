// The progress engine: the one thread of a process that moves bytes.
//
// It waits on every link's file descriptors (epoll), runs tasks that other threads hand it, and
// fires timers. Links, listeners and schedule executors live on this thread (shared-nothing: no
// locks on the data path). Other threads talk to it only through post(): a lock-free queue plus an
// eventfd wake-up that is written only when the engine is asleep.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <unordered_map>

#include <boost/lockfree/queue.hpp>

namespace hcomm::transport {

/// Receives readiness events for one fd (engine thread).
class FdHandler {
 public:
  virtual void on_events(int fd, uint32_t events) = 0;

 protected:
  ~FdHandler() = default;
};

class ProgressEngine {
 public:
  using Task = std::function<void()>;
  using Clock = std::chrono::steady_clock;
  using TimerId = uint64_t;

  ProgressEngine();
  /// Stops the thread; tasks still queued are run first, timers are dropped.
  ~ProgressEngine();
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;

  /// Any thread: runs `task` on the engine thread, in posting order per posting thread.
  void post(Task task);
  bool on_engine_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

  // ---- engine thread only
  void add_fd(int fd, uint32_t events, FdHandler* handler);
  void modify_fd(int fd, uint32_t events);
  void remove_fd(int fd);
  TimerId add_timer(Clock::time_point when, Task task);
  void cancel_timer(TimerId id);

 private:
  void run();
  void drain_tasks();
  int next_timeout_ms();
  void fire_timers();

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> sleeping_{false};
  boost::lockfree::queue<Task*> tasks_{256};
  std::unordered_map<int, FdHandler*> handlers_;
  std::multimap<Clock::time_point, TimerId> timer_order_;
  std::unordered_map<TimerId, std::pair<Clock::time_point, Task>> timers_;
  TimerId next_timer_ = 1;
  std::thread thread_;
};

}  // namespace hcomm::transport
