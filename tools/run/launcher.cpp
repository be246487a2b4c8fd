// Starting the ranks, the poll() loop that forwards their output and reads signals, reaping, and
// stopping the job: SIGTERM (or the launcher's signal) first, SIGKILL after a grace period.
#include "run/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "run/preflight.hpp"
#include "run/rank_process.hpp"

namespace hcomm::tools::run {
namespace {

constexpr auto kGracePeriod = std::chrono::seconds(2);  // SIGTERM -> SIGKILL

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace

Launcher::Launcher(Options opts, std::string root_addr, std::string job_secret)
    : opts_(std::move(opts)),
      root_addr_(std::move(root_addr)),
      job_secret_(std::move(job_secret)),
      ranks_(opts_.ranks) {}

bool Launcher::set_up() {
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, SIGCHLD);
  // A stop signal ignored on entry (nohup, a background job of a script) stays ignored, for the
  // launcher as for the ranks, which inherit that: it is how the caller asked to run the job.
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) {
      sigaddset(&handled, sig);
    }
  }
  sigprocmask(SIG_BLOCK, &handled, &saved_mask_);
  // An inherited SIG_IGN for SIGCHLD would make the kernel reap the ranks behind our back.
  signal(SIGCHLD, SIG_DFL);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &saved_sigpipe_);

  signal_fd_ = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
  devnull_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (signal_fd_ < 0 || devnull_fd_ < 0) {
    note(std::string("cannot set up: ") + std::strerror(errno));
    return false;
  }
  rank_cpus_ = rank_cpus(opts_.ranks, opts_.bind_to_core);
  return true;
}

bool Launcher::start_rank(int rank) {
  int out[2], err[2], status[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 || pipe2(status, O_CLOEXEC) != 0) {
    // Leaked descriptors do not matter: the job is over and the launcher exits soon.
    terminate(kExitLauncherError, SIGTERM,
              "cannot start rank " + std::to_string(rank) + ": " + std::strerror(errno));
    return false;
  }
  std::vector<std::string> env = rank_environment(rank, opts_.ranks, root_addr_, job_secret_);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  ChildSetup setup;
  setup.launcher = getpid();
  setup.pgid = pgid_;
  setup.stdin_fd = devnull_fd_;
  setup.stdout_fd = out[1];
  setup.stderr_fd = err[1];
  setup.status_fd = status[1];
  setup.signal_mask = &saved_mask_;
  setup.sigpipe_action = &saved_sigpipe_;
  setup.argv = opts_.command.data();
  setup.envp = envp.data();
  cpu_set_t cpus;
  setup.cpus = nullptr;
  if (static_cast<size_t>(rank) < rank_cpus_.size()) {
    CPU_ZERO(&cpus);
    CPU_SET(rank_cpus_[static_cast<size_t>(rank)], &cpus);
    setup.cpus = &cpus;
  }

  pid_t pid = fork();
  if (pid == 0) become_rank(setup);
  int fork_errno = errno;
  for (int fd : {out[1], err[1], status[1]}) close(fd);
  if (pid < 0) {
    for (int fd : {out[0], err[0], status[0]}) close(fd);
    terminate(kExitLauncherError, SIGTERM,
              "cannot start rank " + std::to_string(rank) + ": " + std::strerror(fork_errno));
    return false;
  }

  if (pgid_ == 0) pgid_ = pid;
  ++running_;
  std::string prefix = opts_.tag_output ? "[" + std::to_string(rank) + "] " : "";
  for (int fd : {out[0], err[0]}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  ranks_[rank] = Rank{pid, true, LineForwarder(out[0], &stdout_, prefix),
                      LineForwarder(err[0], &stderr_, prefix), ""};

  // The status pipe closes on exec: EOF means the program runs (in the ranks' group, with its
  // death signal set), an errno means it never will.
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(status[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  close(status[0]);
  if (n == sizeof(child_errno)) {
    terminate(
        kExitCannotExec, SIGTERM,
        "cannot execute '" + std::string(opts_.command[0]) + "': " + std::strerror(child_errno));
    return false;
  }
  return true;
}

int Launcher::run() {
  if (!set_up()) return kExitLauncherError;
  if (opts_.timeout_s > 0) {
    job_deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(opts_.timeout_s));
  }
  // Nothing is reaped before every rank is started: rank 0 leads the group, and even if it has
  // already exited, as an unreaped zombie it keeps the group open for the others to join.
  for (int rank = 0; rank < opts_.ranks && start_rank(rank); ++rank) {
  }

  std::vector<pollfd> fds;
  std::vector<LineForwarder*> sources;
  while (running_ > 0) {
    fds.assign(1, pollfd{signal_fd_, POLLIN, 0});
    sources.clear();
    for (Rank& rank : ranks_) {
      for (LineForwarder* source : {&rank.out, &rank.err}) {
        if (!source->is_open()) continue;
        fds.push_back(pollfd{source->fd(), POLLIN, 0});
        sources.push_back(source);
      }
    }
    if (poll(fds.data(), fds.size(), poll_timeout_ms()) < 0 && errno != EINTR) {
      note(std::string("poll failed: ") + std::strerror(errno) + "; killing all ranks");
      signal_ranks(SIGKILL);
      return kExitLauncherError;
    }
    // Output before signals, so that a failed rank's last words come before the verdict.
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) sources[i - 1]->read_once();
    }
    if (fds[0].revents & POLLIN) handle_signals();
    check_deadlines();
  }

  for (Rank& rank : ranks_) {
    for (LineForwarder* source : {&rank.out, &rank.err}) {
      source->drain();
      source->close();
    }
  }
  if (opts_.keep_going) report_outcomes();
  return exit_code_;
}

void Launcher::handle_signals() {
  signalfd_siginfo info;
  while (read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
    int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      reap();
    } else if (terminating_) {
      // Asked again while already stopping (a second Ctrl-C): stop waiting for the ranks.
      signal_ranks(SIGKILL);
    } else {
      fatal_signal_ = sig;
      terminate(128 + sig, sig, "got " + signal_name(sig) + "; passing it on to all ranks");
    }
  }
}

void Launcher::reap() {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (int rank = 0; rank < opts_.ranks; ++rank) {
      Rank& r = ranks_[rank];
      if (r.pid != pid || !r.running) continue;
      r.running = false;
      --running_;
      r.out.drain();
      r.err.drain();
      report_exit(rank, status);
    }
  }
}

// Only the first failure is reported: once the job is being stopped, ranks dying of the
// launcher's signals are expected. With --keep-going nothing is stopped, so every failure is
// reported, and the first one decides the exit status.
void Launcher::report_exit(int rank, int status) {
  if (terminating_) return;
  std::string failure;
  int exit_code = 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    exit_code = WEXITSTATUS(status);
    failure = "exited with code " + std::to_string(exit_code);
  } else if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    exit_code = 128 + sig;
    failure =
        "was killed by signal " + signal_name(sig) + (WCOREDUMP(status) ? " (core dumped)" : "");
  }
  if (failure.empty()) return;
  std::string who = "rank " + std::to_string(rank);
  if (!opts_.keep_going) {
    terminate(exit_code, SIGTERM, who + " " + failure + "; terminating the other ranks");
    return;
  }
  ranks_[rank].failure = failure;
  if (exit_code_ == 0) exit_code_ = exit_code;
  note(who + " " + failure + "; --keep-going: the other ranks go on");
}

// --keep-going: one line on how the job ended, once every rank is done. After a timeout or a
// signal the ranks were stopped by the launcher, which terminate() has already said.
void Launcher::report_outcomes() const {
  if (terminating_) return;
  std::string failed;
  int succeeded = 0;
  for (size_t rank = 0; rank < ranks_.size(); ++rank) {
    if (ranks_[rank].failure.empty()) {
      ++succeeded;
      continue;
    }
    failed += (failed.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) + " " +
              ranks_[rank].failure;
  }
  if (failed.empty()) return;
  note("--keep-going: " + std::to_string(succeeded) + " of " + std::to_string(ranks_.size()) +
       " ranks exited with code 0; " + failed);
}

// Starts stopping the job: `sig` now, SIGKILL after the grace period. The first cause decides
// the exit status.
void Launcher::terminate(int exit_code, int sig, const std::string& reason) {
  if (terminating_) return;
  terminating_ = true;
  exit_code_ = exit_code;
  note(reason);
  signal_ranks(sig);
  kill_deadline_ = Clock::now() + kGracePeriod;
}

// The group reaches what the ranks forked; signalling each rank as well reaches a rank that left
// the group (setsid), which the launcher would otherwise wait for forever. An unreaped pid
// cannot have been reused, so neither signal can hit a stranger.
void Launcher::signal_ranks(int sig) {
  if (running_ == 0) return;
  kill(-pgid_, sig);
  for (const Rank& rank : ranks_) {
    if (rank.running) kill(rank.pid, sig);
  }
}

void Launcher::check_deadlines() {
  Clock::time_point now = Clock::now();
  if (!terminating_ && job_deadline_ && now >= *job_deadline_) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", opts_.timeout_s);
    terminate(kExitTimeout, SIGTERM,
              std::string("the job ran longer than the timeout of ") + seconds +
                  " s; terminating all ranks");
  }
  if (kill_deadline_ && now >= *kill_deadline_) {
    signal_ranks(SIGKILL);
    kill_deadline_.reset();
  }
}

int Launcher::poll_timeout_ms() const {
  std::optional<Clock::time_point> next = kill_deadline_;
  if (!terminating_ && job_deadline_ && (!next || *job_deadline_ < *next)) next = job_deadline_;
  if (!next) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
  return static_cast<int>(std::max<decltype(left)>(left, 0));
}

}  // namespace hcomm::tools::run
