#include "run/rank_process.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>

#include "bootstrap/launch_env.hpp"
#include "run/options.hpp"

extern char** environ;

namespace hcomm::tools::run {

void become_rank(const ChildSetup& s) {
  // Without its group a rank could not be stopped, so failing to join is failing to start.
  bool ok = setpgid(0, s.pgid) == 0 && prctl(PR_SET_PDEATHSIG, SIGKILL) == 0;
  if (ok && getppid() != s.launcher) _exit(kExitCannotExec);
  ok = ok && dup2(s.stdin_fd, STDIN_FILENO) >= 0 && dup2(s.stdout_fd, STDOUT_FILENO) >= 0 &&
       dup2(s.stderr_fd, STDERR_FILENO) >= 0;
  // The launcher's signal set-up must not leak into the program: masks and ignored signals
  // survive exec.
  ok = ok && sigaction(SIGPIPE, s.sigpipe_action, nullptr) == 0 &&
       sigprocmask(SIG_SETMASK, s.signal_mask, nullptr) == 0;
  // Binding is best effort: a rank that runs unbound is slower, not wrong.
  if (ok && s.cpus != nullptr) sched_setaffinity(0, sizeof(cpu_set_t), s.cpus);
  if (ok) execvpe(s.argv[0], s.argv, s.envp);
  int err = errno;
  ssize_t ignored = write(s.status_fd, &err, sizeof(err));
  (void)ignored;
  _exit(kExitCannotExec);
}

std::vector<std::string> rank_environment(int rank, int ranks, const std::string& root_addr,
                                          const std::string& job_secret) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry; ++entry)
    if (!bootstrap::is_launch_variable(*entry)) env.emplace_back(*entry);
  if (!job_secret.empty()) env.push_back("HCOMM_JOB_KEY=" + job_secret);
  // One host: the local rank and size are the job's.
  for (std::string& v : bootstrap::launch_variables({rank, ranks, rank, ranks, root_addr}))
    env.push_back(std::move(v));
  return env;
}

}  // namespace hcomm::tools::run
