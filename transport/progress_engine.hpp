// The progress engine: what moves the bytes of a process.
//
// It waits on every link's file descriptors (epoll), runs tasks that other threads hand it, and
// fires timers. Links, listeners and schedule executors belong to it (shared-nothing: no locks on
// the data path). Other threads talk to it only through post(): a lock-free queue plus an eventfd
// wake-up that is written only when the engine is asleep.
//
// Who runs it: the engine's own thread, or — while an application thread waits for a small
// operation — that application thread itself (drive_until). Handing progress to the waiting
// thread removes two sleep/wake-ups per operation (the engine's and the waiter's): most of a
// small operation's latency (README, "Using it"). Exactly one thread drives at a
// time (the drive mutex), so everything the engine owns still sees a single thread at a time.
// The engine thread, displaced by a caller, parks and stays parked for a short while after the
// caller leaves, so a loop of blocking operations never wakes it.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/lockfree/queue.hpp>

namespace hcomm::transport {

/// Receives readiness events for one fd (engine thread).
class FdHandler {
 public:
  virtual void on_events(int fd, uint32_t events) = 0;

 protected:
  ~FdHandler() = default;
};

/// Something the engine looks at on every round without a system call (a shared-memory ring).
/// Engine thread only.
class Poller {
 public:
  /// Moves what is ready; true when it did anything (the engine then keeps polling busily).
  virtual bool poll() = 0;
  /// The engine is about to block in epoll: arrange to be woken through an fd the engine watches
  /// (e.g. tell the peer to ring a doorbell), then look once more. False: work is ready, do not
  /// block.
  virtual bool prepare_sleep() = 0;
  /// The longest the engine may sleep before it looks again, in ms (for work that nobody can
  /// ring a doorbell for); negative: no limit.
  virtual int max_sleep_ms() const { return -1; }

 protected:
  ~Poller() = default;
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

  /// Who moves a posted task on.
  enum class Waker {
    engine,  ///< nobody else: the engine thread runs it now (woken from epoll or its park)
    nearby,  ///< a caller is likely to wait and drive soon (a small asynchronous operation):
             ///< an engine asleep in epoll is rung, a parked one looks by itself within its park
             ///< (waking it would cost that caller's wait a wake-up)
    caller,  ///< the posting thread calls drive_until() right away: nobody is woken
  };
  /// Any thread: runs `task` on the engine, in posting order per posting thread.
  void post(Task task, Waker waker = Waker::engine);
  /// Any thread but a driving one: runs the engine on the calling thread, busy polling, until
  /// `done()` or `until`; waits its turn if another thread drives. Returns done().
  bool drive_until(const std::function<bool()>& done, Clock::time_point until);
  /// Any thread: work that a Poller finds by itself was started outside post() (a slot-board
  /// operation) and nobody may drive it: unless a caller drives, the engine thread looks now,
  /// woken from epoll or from its park (else it would look only at its next timeout).
  void wake_for_work();
  /// Counts operations in flight (their owners add 1 when one starts and -1 when it ends), so
  /// that a caller that stops driving knows whether the engine thread must take over.
  std::atomic<int>& active_operations() { return active_; }

  // ---- engine thread only
  void add_fd(int fd, uint32_t events, FdHandler* handler);
  void modify_fd(int fd, uint32_t events);
  void remove_fd(int fd);
  TimerId add_timer(Clock::time_point when, Task task);
  void cancel_timer(TimerId id);
  void add_poller(Poller* poller);
  void remove_poller(Poller* poller);

 private:
  void run();
  /// Runs every poller; true when one did something.
  bool run_pollers();
  /// One round: tasks, timers, pollers, ready fds. Blocks in epoll only when `may_sleep` and the
  /// busy-poll window after the last activity has passed.
  void poll_once(bool may_sleep);
  void park();
  /// Makes a blocking epoll_wait return (the eventfd).
  void ring_doorbell();
  void wake_engine_thread();
  void drain_tasks();
  int next_timeout_ms();
  void fire_timers();

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> sleeping_{false};       // the driver is (about to be) blocked in epoll_wait
  std::mutex drive_mutex_;                  // held by whichever thread drives
  std::atomic<uint32_t> callers_{0};        // application threads driving or waiting to
  std::atomic<uint32_t> park_word_{0};      // futex word the parked engine thread sleeps on
  std::atomic<bool> handoff_{false};        // the engine thread must drive now
  std::atomic<int> active_{0};              // operations in flight
  std::atomic<int64_t> last_caller_ns_{0};  // when a caller last stopped driving
  Clock::time_point busy_until_{};
  std::vector<epoll_event> events_;
  boost::lockfree::queue<Task*> tasks_{256};
  std::unordered_map<int, FdHandler*> handlers_;
  std::vector<Poller*> pollers_;  // removed ones are null until the next round compacts
  bool pollers_removed_ = false;
  unsigned rounds_ = 0;
  std::multimap<Clock::time_point, TimerId> timer_order_;
  std::unordered_map<TimerId, std::pair<Clock::time_point, Task>> timers_;
  TimerId next_timer_ = 1;
  std::thread thread_;
};

}  // namespace hcomm::transport
