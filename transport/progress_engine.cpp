#include "transport/progress_engine.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/futex.hpp"
#include "core/log.hpp"

namespace hcomm::transport {
namespace {
// After activity the engine thread polls without sleeping for this long: a reply to a small frame
// usually arrives within it, and an epoll sleep/wake-up costs more.
constexpr auto kBusyPoll = std::chrono::microseconds(30);
// With shared-memory pollers, a busy round calls epoll_wait only every this many rounds.
constexpr unsigned kPollsPerEpoll = 16;
// How long the engine thread stays parked after a caller stopped driving: a loop of blocking
// operations is back well within it (so the engine thread never runs in between), and work left
// running after the caller returned waits at most this long for progress.
constexpr int64_t kLingerNs = 200 * 1000;
// While a caller drives, the parked engine thread sleeps this long between looks. A caller that
// leaves work in flight wakes it at once; what this bounds is the rare async operation posted
// just after a caller stopped driving, with nobody waiting for it. Shorter costs the spinning
// callers: every wake-up preempts one of them where ranks share few cores.
constexpr int64_t kParkCheckNs = 2 * 1000 * 1000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             ProgressEngine::Clock::now().time_since_epoch())
      .count();
}

}  // namespace

ProgressEngine::ProgressEngine() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  events_.resize(64);
  thread_ = std::thread([this] { run(); });
}

ProgressEngine::~ProgressEngine() {
  stopping_.store(true);
  ring_doorbell();
  wake_engine_thread();
  thread_.join();
  drain_tasks();  // tasks posted during shutdown still release what they own
  close(wake_fd_);
  close(epoll_fd_);
}

void ProgressEngine::post(Task task, Waker waker) {
  tasks_.push(new Task(std::move(task)));
  switch (waker) {
    case Waker::caller:
      return;
    case Waker::nearby:
      if (sleeping_.exchange(false)) ring_doorbell();
      return;
    case Waker::engine:
      // A parked engine thread would look only within kLingerNs, or kParkCheckNs after a
      // caller that drove left nothing in flight.
      wake_for_work();
      return;
  }
}

void ProgressEngine::wake_for_work() {
  if (callers_.load() > 0) return;  // the driving caller runs the pollers
  if (sleeping_.exchange(false))
    ring_doorbell();
  else
    wake_engine_thread();  // parked (or about to park): it drives at once
}

void ProgressEngine::ring_doorbell() {
  uint64_t one = 1;
  ssize_t ignored = write(wake_fd_, &one, sizeof(one));
  (void)ignored;
}

void ProgressEngine::wake_engine_thread() {
  handoff_.store(true);
  park_word_.fetch_add(1);
  core::futex_wake(&park_word_, 1);
}

bool ProgressEngine::drive_until(const std::function<bool()>& done, Clock::time_point until) {
  if (done()) return true;
  callers_.fetch_add(1);
  // The engine thread may block in epoll holding the drive mutex: get it out.
  if (sleeping_.exchange(false)) ring_doorbell();
  std::unique_lock<std::mutex> lock(drive_mutex_, std::defer_lock);
  // Another thread drives: it progresses this caller's work too, so watch done() meanwhile.
  for (unsigned spins = 0; !lock.try_lock(); ++spins) {
    if (done() || Clock::now() >= until || stopping_.load()) break;
    if (spins > 64) std::this_thread::yield();
  }
  if (lock.owns_lock()) {
    for (unsigned rounds = 1;
         !done() && !stopping_.load(std::memory_order_relaxed) && Clock::now() < until; ++rounds) {
      poll_once(false);
      // A peer process on this host may be waiting for this core (more runnable threads than
      // cores): let it run now and then, or the spin budget passes before it can answer.
      if (rounds % 64 == 0) std::this_thread::yield();
    }
    lock.unlock();
  }
  const bool finished = done();
  last_caller_ns_.store(now_ns());
  // Work left over (this caller's or anyone's) needs the engine thread now.
  if (callers_.fetch_sub(1) == 1 && (active_.load() > 0 || !tasks_.empty())) wake_engine_thread();
  return finished;
}
void ProgressEngine::add_fd(int fd, uint32_t events, FdHandler* handler) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0)
    HCOMM_LOG(error, core::log::kNet, "epoll_ctl(ADD, fd %d): %s", fd, strerror(errno));
  handlers_[fd] = handler;
}

void ProgressEngine::modify_fd(int fd, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
}

void ProgressEngine::remove_fd(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  handlers_.erase(fd);
}

ProgressEngine::TimerId ProgressEngine::add_timer(Clock::time_point when, Task task) {
  TimerId id = next_timer_++;
  timers_.emplace(id, std::make_pair(when, std::move(task)));
  timer_order_.emplace(when, id);
  return id;
}

void ProgressEngine::cancel_timer(TimerId id) {
  timers_.erase(id);
}

void ProgressEngine::add_poller(Poller* poller) {
  pollers_.push_back(poller);
}

void ProgressEngine::remove_poller(Poller* poller) {
  for (auto& p : pollers_)
    if (p == poller) p = nullptr;
  pollers_removed_ = true;
}

bool ProgressEngine::run_pollers() {
  bool worked = false;
  for (size_t i = 0; i < pollers_.size(); ++i)  // a poll may add pollers (never remove slots)
    if (Poller* p = pollers_[i]) worked |= p->poll();
  if (pollers_removed_) {
    pollers_removed_ = false;
    pollers_.erase(std::remove(pollers_.begin(), pollers_.end(), nullptr), pollers_.end());
  }
  return worked;
}

void ProgressEngine::drain_tasks() {
  Task* t = nullptr;
  while (tasks_.pop(t)) {
    (*t)();
    delete t;
  }
}

int ProgressEngine::next_timeout_ms() {
  while (!timer_order_.empty() && timers_.count(timer_order_.begin()->second) == 0)
    timer_order_.erase(timer_order_.begin());
  if (timer_order_.empty()) return 1000;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(timer_order_.begin()->first -
                                                                    Clock::now())
                  .count();
  return left <= 0 ? 0 : static_cast<int>(left < 1000 ? left + 1 : 1000);
}

void ProgressEngine::fire_timers() {
  auto now = Clock::now();
  while (!timer_order_.empty() && timer_order_.begin()->first <= now) {
    TimerId id = timer_order_.begin()->second;
    timer_order_.erase(timer_order_.begin());
    auto it = timers_.find(id);
    if (it == timers_.end()) continue;
    Task task = std::move(it->second.second);
    timers_.erase(it);
    task();
  }
}

void ProgressEngine::park() {
  const uint32_t word = park_word_.load();
  if (callers_.load() > 0) {
    core::futex_wait(&park_word_, word, std::chrono::nanoseconds(kParkCheckNs));
    return;
  }
  const int64_t idle_for = now_ns() - last_caller_ns_.load();
  if (handoff_.exchange(false) || idle_for >= kLingerNs) return;
  core::futex_wait(&park_word_, word, std::chrono::nanoseconds(kLingerNs - idle_for));
}

void ProgressEngine::run() {
  while (!stopping_.load()) {
    park();
    if (stopping_.load() || callers_.load() > 0) continue;
    std::lock_guard<std::mutex> lock(drive_mutex_);
    while (!stopping_.load(std::memory_order_relaxed) && callers_.load() == 0) poll_once(true);
  }
}

void ProgressEngine::poll_once(bool may_sleep) {
  drain_tasks();
  fire_timers();
  if (!pollers_.empty()) {
    if (run_pollers()) {
      busy_until_ = Clock::now() + kBusyPoll;
      // Shared memory is busy: look at the sockets only every few rounds (epoll_wait is a
      // system call, a ring look is a load).
      if (++rounds_ % kPollsPerEpoll != 0) return;
    }
  }
  int timeout = 0;
  if (may_sleep && Clock::now() >= busy_until_) {
    // Announce the sleep, then look once more so a post() or a caller racing with it is not
    // missed.
    sleeping_.store(true);
    bool ready = !tasks_.empty() || callers_.load() > 0;
    for (size_t i = 0; !ready && i < pollers_.size(); ++i)
      ready = pollers_[i] != nullptr && !pollers_[i]->prepare_sleep();
    if (ready) {
      sleeping_.store(false);
      return;
    }
    timeout = next_timeout_ms();
    for (Poller* p : pollers_) {
      const int cap = p != nullptr ? p->max_sleep_ms() : -1;
      if (cap >= 0 && cap < timeout) timeout = cap;
    }
  } else if (!pollers_.empty() && ++rounds_ % kPollsPerEpoll != 0) {
    return;  // busy polling: shared memory every round, sockets every few
  }
  int n = epoll_wait(epoll_fd_, events_.data(), static_cast<int>(events_.size()), timeout);
  sleeping_.store(false);
  if (n < 0) {
    if (errno != EINTR) HCOMM_LOG(error, core::log::kNet, "epoll_wait: %s", strerror(errno));
    return;
  }
  if (n > 0) busy_until_ = Clock::now() + kBusyPoll;
  for (int i = 0; i < n; ++i) {
    const epoll_event ev = events_[static_cast<size_t>(i)];
    if (ev.data.fd == wake_fd_) {
      uint64_t v;
      ssize_t ignored = read(wake_fd_, &v, sizeof(v));
      (void)ignored;
      continue;
    }
    auto it = handlers_.find(ev.data.fd);  // a handler may have removed itself (or another)
    if (it != handlers_.end()) it->second->on_events(ev.data.fd, ev.events);
  }
}

}  // namespace hcomm::transport
