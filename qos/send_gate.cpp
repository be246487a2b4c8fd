#include "qos/send_gate.hpp"

#include <algorithm>
#include <mutex>

#include "qos/host_board.hpp"

namespace hcomm {
namespace {
std::mutex scheduler_mutex;
std::shared_ptr<Scheduler> scheduler_now;
// A frame may be this much ahead of its class's rate after an idle spell.
constexpr double kBurstBytes = 256 * 1024;
// The kernel's pacing of a class's sockets: a little above the class's rate, so that the token
// bucket, not the kernel, sets the average (0: no pacing).
double pacing_for(double rate) {
  return rate > 0 ? rate * 1.1 : 0;
}
}  // namespace

void set_scheduler(std::shared_ptr<Scheduler> scheduler) {
  std::lock_guard<std::mutex> lock(scheduler_mutex);
  scheduler_now = std::move(scheduler);
}

namespace qos {

std::shared_ptr<Scheduler> current_scheduler() {
  std::lock_guard<std::mutex> lock(scheduler_mutex);
  return scheduler_now;
}

void SendGate::add_class(ClassId id, int priority, double rate, HostBoard* board, int slot) {
  Class c{priority, TokenBucket(rate, kBurstBytes, Clock::now()), {}, board, slot, {}};
  classes_.erase(id);
  classes_.emplace(id, std::move(c));
}

void SendGate::remove_class(ClassId id) {
  classes_.erase(id);
}

void SendGate::set_class(ClassId id, int priority, double rate) {
  auto it = classes_.find(id);
  if (it == classes_.end()) return;
  it->second.priority = priority;
  it->second.bucket.set_rate(rate, Clock::now());
  // The kernel spreads each frame over time at (a little above) the rate, so that a large frame
  // does not reach the bottleneck as one burst and queue the other classes' packets behind it.
  for (auto* link : it->second.links) link->set_pacing_rate(pacing_for(rate));
  pump();  // a higher rate may let waiting frames go now
}

void SendGate::post(ClassId id, transport::Link* link, transport::SendRequest* request) {
  auto it = classes_.find(id);
  if (it == classes_.end()) return link->post_send(request);
  const auto now = Clock::now();
  auto& links = it->second.links;
  if (std::find(links.begin(), links.end(), link) == links.end()) {
    links.push_back(link);
    link->set_pacing_rate(pacing_for(it->second.bucket.rate()));
  }
  it->second.queue.push_back({link, request, now});
  pump();
  // After the pump: whether this class's frames wait now.
  if (auto again = classes_.find(id); again != classes_.end()) stamp(again->second, now, 0);
}

void SendGate::stamp(Class& c, Clock::time_point now, size_t bytes) {
  if (c.board == nullptr) return;
  // Busy while it pays off what it sent (or has frames waiting), and a little after: a class
  // that looked idle while its bucket is in debt would be given nothing, and never get out.
  const auto busy_until = std::max(now, c.bucket.ready_at(now)) + kActiveFor;
  const int64_t until =
      std::chrono::duration_cast<std::chrono::nanoseconds>(busy_until.time_since_epoch()).count();
  // Backlogged: frames wait for tokens (a class in debt with nothing waiting sends all it has).
  const bool backlogged = !c.queue.empty();
  c.board->note(c.slot, bytes, until, backlogged);
}

void SendGate::pump() {
  // A link may complete a send at once and its callback post the next frame: that frame only
  // queues; this loop takes it.
  if (pumping_) return;
  pumping_ = true;
  const auto scheduler = current_scheduler();
  for (;;) {
    const auto now = Clock::now();
    tasks_.clear();
    Clock::time_point next = Clock::time_point::max();
    for (auto& [id, c] : classes_) {
      if (c.queue.empty()) continue;
      if (c.bucket.ready(now))
        tasks_.push_back(
            {id, c.priority, c.queue.front().request->header.length, c.queue.front().since});
      else
        next = std::min(next, c.bucket.ready_at(now));
    }
    if (tasks_.empty()) {
      if (next != Clock::time_point::max()) arm(next);
      break;
    }
    if (tasks_.size() > 1) {
      if (scheduler)
        scheduler->schedule(tasks_);
      else
        std::stable_sort(tasks_.begin(), tasks_.end(), [](const QosTask& a, const QosTask& b) {
          return a.priority != b.priority ? a.priority > b.priority : a.queued < b.queued;
        });
    }
    auto it = classes_.end();
    for (const QosTask& t : tasks_) {  // the first the Scheduler put that is really waiting
      it = classes_.find(t.comm);
      if (it != classes_.end() && !it->second.queue.empty()) break;
      it = classes_.end();
    }
    if (it == classes_.end()) break;
    Class& c = it->second;
    Queued q = c.queue.front();
    c.queue.pop_front();
    c.bucket.take(q.request->header.length, now);
    stamp(c, now, q.request->header.length);
    q.link->post_send(q.request);
  }
  pumping_ = false;
}

void SendGate::arm(Clock::time_point when) {
  if (timer_ != 0 && timer_at_ <= when) return;
  if (timer_ != 0) engine_.cancel_timer(timer_);
  timer_at_ = when;
  timer_ = engine_.add_timer(when, [this] {
    timer_ = 0;
    pump();
  });
}

}  // namespace qos
}  // namespace hcomm
