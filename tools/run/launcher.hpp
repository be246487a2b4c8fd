// The launcher proper: starts the ranks and supervises them until every one is reaped, making
// sure that no rank outlives the job: not when a rank fails, not when the job times out, not when
// the launcher is signalled or even SIGKILLed.
//
// How the guarantees are kept:
// - One thread, one poll() loop over every rank's stdout/stderr pipe and a signalfd. SIGCHLD,
//   SIGINT, SIGTERM and SIGHUP stay blocked and are read from the signalfd, so there are no
//   signal handlers and no races between them and the loop.
// - All ranks share one process group, led by rank 0, so one kill(-pgid) reaches every rank and
//   whatever the ranks forked. The group is signalled only while some rank is still unreaped:
//   a member, even a zombie, keeps the group id from being reused by an unrelated group.
// - Every rank has PR_SET_PDEATHSIG(SIGKILL): if the launcher dies without cleaning up, the
//   kernel kills the ranks (rank_process.hpp).
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "run/options.hpp"
#include "run/output.hpp"

namespace hcomm::tools::run {

/// One Launcher per process: it blocks signals and owns the process's children. Not thread-safe;
/// run() is called once.
class Launcher {
 public:
  /// `job_secret`: given to every rank as HCOMM_JOB_KEY; empty: the ranks inherit the
  /// launcher's environment as it is.
  Launcher(Options opts, std::string root_addr, std::string job_secret);
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  /// Runs the job until every started rank is reaped; returns the launcher's exit status.
  int run();
  /// The signal that stopped the job, which the launcher should die of too; 0 if none.
  int fatal_signal() const { return fatal_signal_; }

 private:
  using Clock = std::chrono::steady_clock;

  struct Rank {
    pid_t pid = -1;
    bool running = false;  ///< started and not yet reaped
    LineForwarder out;
    LineForwarder err;
    std::string failure;  ///< --keep-going: how it failed ("exited with code 3"); empty: it did not
  };

  bool set_up();
  bool start_rank(int rank);
  void handle_signals();
  void reap();
  void report_exit(int rank, int status);
  void report_outcomes() const;
  void terminate(int exit_code, int sig, const std::string& reason);
  void signal_ranks(int sig);
  void check_deadlines();
  int poll_timeout_ms() const;

  Options opts_;
  std::string root_addr_;
  std::string job_secret_;
  std::vector<Rank> ranks_;
  int running_ = 0;  ///< ranks started and not yet reaped
  pid_t pgid_ = 0;   ///< the ranks' process group (rank 0's pid); valid while running_ > 0
  Sink stdout_{STDOUT_FILENO};
  Sink stderr_{STDERR_FILENO};
  int signal_fd_ = -1;
  int devnull_fd_ = -1;
  sigset_t saved_mask_;
  struct sigaction saved_sigpipe_ {};
  std::optional<Clock::time_point> job_deadline_;
  std::optional<Clock::time_point> kill_deadline_;  ///< when SIGTERMed ranks get SIGKILL
  bool terminating_ = false;
  int exit_code_ = 0;
  int fatal_signal_ = 0;
  std::vector<int> rank_cpus_;  ///< by rank, when ranks are bound to cores
};

}  // namespace hcomm::tools::run
