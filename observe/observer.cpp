#include "observe/observer.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "core/log.hpp"

namespace hcomm::observe {

namespace {

constexpr auto kTick = std::chrono::milliseconds(10);
constexpr size_t kRetiredKept = 8;

std::atomic<bool> g_dump_signal{false};

extern "C" void on_dump_signal(int) {
  g_dump_signal.store(true, std::memory_order_relaxed);
}

/// SIGUSR1 dumps the flight recorder, unless the application handles the signal itself.
void install_dump_signal() {
  struct sigaction old {};
  if (::sigaction(SIGUSR1, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
  struct sigaction sa {};
  sa.sa_handler = on_dump_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGUSR1, &sa, nullptr);
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

Observer* g_observer = nullptr;

}  // namespace

Expected<Settings> Observer::settings() {
  static const Expected<Settings> once = Settings::from_env();
  return once;
}

Observer& Observer::get() {
  static Observer* const instance = [] {
    auto* o = new Observer(settings().ok() ? settings().value() : Settings{});
    g_observer = o;
    std::atexit([] { g_observer->at_exit(); });
    return o;
  }();
  return *instance;
}

Observer::Observer(Settings settings) : settings_(std::move(settings)), host_(host_name()) {
  if (settings_.stats) {
    auto stats = StatsPublisher::create(host_);
    if (stats.ok()) {
      stats_ = std::move(stats.value());
    } else {
      HCOMM_LOG(info, core::log::kInit, "no live counters for hcomm-perf-mon: %s",
                stats.status().to_string().c_str());
    }
  }
  install_dump_signal();
  TimeBase::get();  // calibrated here, not on the first operation
  thread_ = std::thread([this] { run(); });
}

std::shared_ptr<CommTrace> Observer::attach(CommIdentity identity,
                                            actors::CommunicatorControl* control) {
  if (!settings_.records() && !stats_) return nullptr;
  identity.host = host_;
  StatsComm* slot = stats_ ? stats_->claim(identity.id, identity.rank, identity.size) : nullptr;
  auto trace = std::make_shared<CommTrace>(std::move(identity), settings_, control, slot);
  std::lock_guard<std::mutex> lock(mutex_);
  if (process_rank_ < 0) {
    process_rank_ = trace->identity().rank;
    process_size_ = trace->identity().size;
    process_offset_ns_ = trace->offset_ns();
  }
  live_.push_back(trace);
  return trace;
}

void Observer::detach(const std::shared_ptr<CommTrace>& trace) {
  if (!trace) return;
  const std::string failure = trace->unreported_failure();
  if (!failure.empty()) {
    dump("failed", failure);
  } else if (settings_.dump_on_exit) {
    dump("exit", "communicator " + trace->identity().id + " destroyed");
  }
  trace->detach();
  CommTraceData last = trace->gather();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = live_.begin(); it != live_.end(); ++it)
      if (*it == trace) {
        live_.erase(it);
        break;
      }
    retired_.push_back(std::move(last));
    if (retired_.size() > kRetiredKept) retired_.pop_front();
  }
  if (stats_) stats_->release(trace->stats_slot());
  if (settings_.profile > 0) write_profile();
}

ProcessFacts Observer::facts() const {
  ProcessFacts f;
  f.rank = std::max(process_rank_, 0);
  f.world_size = process_size_;
  f.host = host_;
  f.pid = static_cast<int>(::getpid());
  f.offset_ns = process_offset_ns_;
  return f;
}

std::vector<CommTraceData> Observer::gather() {
  std::vector<std::shared_ptr<CommTrace>> live;
  std::vector<CommTraceData> out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live = live_;
    out.assign(retired_.begin(), retired_.end());
  }
  for (const auto& t : live) out.push_back(t->gather());
  return out;
}

std::string Observer::dump(const std::string& reason, const std::string& detail) {
  if (settings_.trace_buffer == 0) return "";
  std::lock_guard<std::mutex> serial(dump_mutex_);
  const auto comms = gather();
  ProcessFacts f;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    f = facts();
  }
  const std::string path = settings_.dump_dir + "/hcomm_trace." + std::to_string(f.rank) + "." +
                           std::to_string(f.pid) + ".json";
  Status st = write_file_atomically(path, dump_json(f, reason, detail, comms));
  if (!st.ok()) {
    HCOMM_LOG(warn, core::log::kInit, "flight recorder not dumped (%s): %s", reason.c_str(),
              st.to_string().c_str());
    return "";
  }
  HCOMM_LOG(warn, core::log::kInit, "flight recorder dumped to %s (%s: %s)", path.c_str(),
            reason.c_str(), detail.c_str());
  return path;
}

void Observer::write_profile() {
  std::lock_guard<std::mutex> serial(dump_mutex_);
  const auto comms = gather();
  ProcessFacts f;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    f = facts();
  }
  const std::string path = settings_.profile_path(f.rank, f.world_size);
  Status st = write_file_atomically(path, profile_json(f, settings_.profile, comms));
  if (!st.ok()) {
    HCOMM_LOG(warn, core::log::kInit, "profile not written: %s", st.to_string().c_str());
    return;
  }
  size_t ops = 0;
  for (const auto& c : comms) ops += c.records.size();
  HCOMM_LOG(info, core::log::kInit, "profile of %zu operations written to %s", ops, path.c_str());
}

void Observer::run() {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  while (!stopping_) {
    lock.unlock();
    tick();
    lock.lock();
    wake_.wait_for(lock, kTick, [this] { return stopping_; });
  }
  stopped_ = true;
  wake_.notify_all();
}

void Observer::tick() {
  std::vector<std::shared_ptr<CommTrace>> live;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live = live_;
  }
  TimeBase::get().add_point();
  const int64_t now = steady_ns();
  for (const auto& t : live) {
    CommTrace::Findings f = t->tick(now);
    if (!f.stall_line.empty()) HCOMM_LOG(warn, core::log::kColl, "stall: %s", f.stall_line.c_str());
    if (!f.launch_error.empty()) {
      HCOMM_LOG(error, core::log::kInit, "aborting communicator %s: %s", t->identity().id.c_str(),
                f.launch_error.c_str());
      t->abort_for_launch_error(f.launch_error);
    }
    if (f.first_stall) {
      dump("stall", f.stall_line);
      t->request_dumps();
    } else if (!f.dump_reason.empty()) {
      dump(f.dump_reason, f.dump_detail);
    }
  }
  if (g_dump_signal.exchange(false, std::memory_order_relaxed)) dump("signal", "SIGUSR1");
}

void Observer::at_exit() {
  bool stopped;
  {
    std::unique_lock<std::mutex> lock(wake_mutex_);
    stopping_ = true;
    wake_.notify_all();
    // A tick blocked on an unreachable store is not waited for past a second.
    stopped = wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopped_; });
  }
  if (stopped) {
    thread_.join();
  } else {
    thread_.detach();
  }
  bool live;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live = !live_.empty();
  }
  if (live && settings_.dump_on_exit) dump("exit", "the process exits");
  if (live && settings_.profile > 0) write_profile();
  if (stopped) stats_.reset();  // removes the segment (a running tick might still write it)
}

}  // namespace hcomm::observe
