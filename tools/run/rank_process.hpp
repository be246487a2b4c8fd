// What a forked child does to become a rank, and the environment it runs with. Everything the
// child needs is prepared before fork(), so that the child only makes system calls.
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace hcomm::tools::run {

struct ChildSetup {
  pid_t launcher;  ///< to detect that the launcher died before PR_SET_PDEATHSIG took effect
  pid_t pgid;      ///< 0 for rank 0, which leads the group
  int stdin_fd, stdout_fd, stderr_fd;
  int status_fd;                ///< close-on-exec; gets errno if the rank cannot be started
  const sigset_t* signal_mask;  ///< the mask the program starts with
  const struct sigaction* sigpipe_action;  ///< SIGPIPE's disposition the program starts with
  char* const* argv;
  char* const* envp;
  const cpu_set_t* cpus;  ///< where the rank runs; null: anywhere
};

/// In the child: joins the ranks' process group, dies with the launcher (PR_SET_PDEATHSIG),
/// takes its descriptors, signal mask and CPU, and executes the program. Never returns: on any
/// failure it writes errno to status_fd and exits with kExitCannotExec.
[[noreturn]] void become_rank(const ChildSetup& s);

/// The launcher's environment minus stale placement variables, plus the job's
/// (bootstrap::launch_variables), and HCOMM_JOB_KEY=`job_secret` unless that is empty. Only the
/// rank-specific entries differ between ranks.
std::vector<std::string> rank_environment(int rank, int ranks, const std::string& root_addr,
                                          const std::string& job_secret);

}  // namespace hcomm::tools::run
