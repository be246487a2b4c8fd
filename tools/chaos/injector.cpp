// The injector's thread: waits for each step's time (or for the end of the run), carries it
// out, and says what it did on stdout, one line each.
#include "chaos/injector.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "chaos/format.hpp"

extern char** environ;

namespace hcomm::tools::chaos {
namespace {

// A command that runs longer than this is killed and counts as failed: the schedule must go on.
constexpr auto kCommandLimit = std::chrono::seconds(30);

std::string exit_description(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* abbrev = sigabbrev_np(WTERMSIG(status));
    return std::string("was killed by SIG") + (abbrev ? abbrev : "?");
  }
  return "ended with status " + std::to_string(status);
}

}  // namespace

Injector::Injector(const FaultPlan& plan, int rank, std::vector<pid_t> pids,
                   Clock::time_point start)
    : plan_(plan), rank_(rank), pids_(std::move(pids)), start_(start) {
  const auto& faults = plan_.faults();
  for (size_t i = 0; i < faults.size(); ++i) {
    if (faults[i].injector != rank_) continue;
    steps_.push_back({faults[i].at_s, i, false});
    if (faults[i].has_end_step()) steps_.push_back({faults[i].end_s(), i, true});
  }
  // By time; at the same time an end before a beginning (a flap's up before the next down).
  std::stable_sort(steps_.begin(), steps_.end(), [](const Step& a, const Step& b) {
    return a.due_s != b.due_s ? a.due_s < b.due_s : a.end > b.end;
  });
}

Injector::~Injector() {
  finish();
}

void Injector::start() {
  if (!steps_.empty() && !thread_.joinable()) thread_ = std::thread([this] { run(); });
}

void Injector::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

double Injector::now_s() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void Injector::run() {
  std::vector<bool> begun(plan_.faults().size(), false);
  size_t next = 0;
  for (; next < steps_.size(); ++next) {
    const Step& step = steps_[next];
    {
      std::unique_lock<std::mutex> lock(mu_);
      const auto due = start_ + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(step.due_s));
      if (cv_.wait_until(lock, due, [this] { return stopping_; })) break;
    }
    perform(step, false);
    if (!step.end) begun[step.fault] = true;
  }
  // The run is over: finish what was begun, say what never happened.
  const double ended = now_s();
  for (; next < steps_.size(); ++next) {
    const Step& step = steps_[next];
    const Fault& fault = plan_.faults()[step.fault];
    if (!step.end) {
      problems_.push_back(fault.label + " (due at " + format("%.3f s", step.due_s) +
                          ") was never injected: the run ended at " + format("%.3f s", ended) +
                          "; make it longer (--iters, --seconds, --interval-ms)");
    } else if (begun[step.fault]) {
      perform(step, true);
      problems_.push_back(fault.label + ": the run ended at " + format("%.3f s", ended) +
                          ", before its end (due at " + format("%.3f s", step.due_s) +
                          "), which was done then: the fault was cut short");
    }
  }
}

void Injector::perform(const Step& step, bool late) {
  const Fault& fault = plan_.faults()[step.fault];
  Injection done;
  switch (fault.kind) {
    case Fault::Kind::command:
      done = run_command(step.end ? fault.undo : fault.command);
      break;
    case Fault::Kind::stop:
      done = send_signal(fault.target, step.end ? SIGCONT : SIGSTOP);
      break;
    case Fault::Kind::kill:
      done = send_signal(fault.target, SIGKILL);
      break;
  }
  done.fault = step.fault;
  done.end = step.end;
  done.due_s = step.due_s;
  const std::string when =
      format("%.3f s", done.started_s) + (late ? " (at the end of the run)" : "");
  char took[48] = "";
  if (fault.kind == Fault::Kind::command)
    std::snprintf(took, sizeof took, " (%.1f ms)", done.took_ms);
  if (done.ok) {
    std::printf("rank %d: %s: %s%s: %s%s\n", rank_, when.c_str(), fault.label.c_str(),
                step.end ? " ends" : "", done.what.c_str(), took);
  } else {
    std::printf("rank %d: %s: %s%s: %s FAILED: %s\n", rank_, when.c_str(), fault.label.c_str(),
                step.end ? " ends" : "", done.what.c_str(), done.error.c_str());
    problems_.push_back(fault.label + (step.end ? " (its end)" : "") + ": " + done.what + " " +
                        done.error);
  }
  done_.push_back(std::move(done));
}

Injection Injector::run_command(const std::string& command) {
  Injection done;
  done.what = "sh -c '" + command + "'";
  done.started_s = now_s();
  const auto began = Clock::now();

  // The command gets default signal handling and an empty mask, whatever this process set up.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string sh = "sh", dash_c = "-c", text = command;
  char* argv[] = {sh.data(), dash_c.data(), text.data(), nullptr};
  pid_t pid = -1;
  const int err = posix_spawn(&pid, "/bin/sh", nullptr, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    done.error = std::string("could not start /bin/sh: ") + std::strerror(err);
    return done;
  }

  // Polled, so that a command that hangs cannot hold the schedule (or the end of the run).
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      done.error = std::string("waitpid failed: ") + std::strerror(errno);
      return done;
    }
    if (Clock::now() - began > kCommandLimit) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      done.took_ms = std::chrono::duration<double, std::milli>(Clock::now() - began).count();
      done.error = "ran longer than 30 s and was killed";
      return done;
    }
    usleep(500);
  }
  done.took_ms = std::chrono::duration<double, std::milli>(Clock::now() - began).count();
  done.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!done.ok) done.error = exit_description(status);
  return done;
}

Injection Injector::send_signal(int rank, int sig) {
  Injection done;
  const pid_t pid = pids_.at(static_cast<size_t>(rank));
  const char* abbrev = sigabbrev_np(sig);
  done.what = std::string("SIG") + (abbrev ? abbrev : "?") + " rank " + std::to_string(rank) +
              " (pid " + std::to_string(pid) + ")";
  done.started_s = now_s();
  done.ok = kill(pid, sig) == 0;
  if (!done.ok) done.error = std::strerror(errno);
  return done;
}

}  // namespace hcomm::tools::chaos
