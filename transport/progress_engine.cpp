#include "transport/progress_engine.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "log/log.hpp"

namespace hcomm::transport {
namespace {
// After activity the engine polls without sleeping for this long: a reply to a small frame
// usually arrives within it, and an epoll sleep/wake-up costs more.
constexpr auto kBusyPoll = std::chrono::microseconds(30);
}  // namespace

ProgressEngine::ProgressEngine() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = std::thread([this] { run(); });
}

ProgressEngine::~ProgressEngine() {
  stopping_.store(true);
  uint64_t one = 1;
  ssize_t ignored = write(wake_fd_, &one, sizeof(one));
  (void)ignored;
  thread_.join();
  drain_tasks();  // tasks posted during shutdown still release what they own
  close(wake_fd_);
  close(epoll_fd_);
}

void ProgressEngine::post(Task task) {
  tasks_.push(new Task(std::move(task)));
  if (sleeping_.exchange(false)) {
    uint64_t one = 1;
    ssize_t ignored = write(wake_fd_, &one, sizeof(one));
    (void)ignored;
  }
}

void ProgressEngine::add_fd(int fd, uint32_t events, FdHandler* handler) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0)
    HCOMM_LOG(error, log::kNet, "epoll_ctl(ADD, fd %d): %s", fd, strerror(errno));
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

void ProgressEngine::run() {
  std::vector<epoll_event> events(64);
  auto busy_until = Clock::now();
  while (!stopping_.load(std::memory_order_relaxed)) {
    drain_tasks();
    fire_timers();
    int timeout = 0;
    if (Clock::now() >= busy_until) {
      // Announce the sleep, then look once more so a post() racing with it is not missed.
      sleeping_.store(true);
      if (!tasks_.empty()) {
        sleeping_.store(false);
        continue;
      }
      timeout = next_timeout_ms();
    }
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout);
    sleeping_.store(false);
    if (n < 0 && errno != EINTR) {
      HCOMM_LOG(error, log::kNet, "epoll_wait: %s", strerror(errno));
      continue;
    }
    if (n > 0) busy_until = Clock::now() + kBusyPoll;
    for (int i = 0; i < n; ++i) {
      int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == wake_fd_) {
        uint64_t v;
        ssize_t ignored = read(wake_fd_, &v, sizeof(v));
        (void)ignored;
        continue;
      }
      auto it = handlers_.find(fd);  // a handler may have removed itself (or another) meanwhile
      if (it != handlers_.end()) it->second->on_events(fd, events[static_cast<size_t>(i)].events);
    }
  }
}

}  // namespace hcomm::transport
