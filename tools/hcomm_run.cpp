// hcomm-run: the local launcher, `mpirun -n N` / `torchrun` for one host.
//
// Starts N ranks of a program, tells each its place in the job through HCOMM_* variables, tags
// their output with the rank, and guarantees that no rank outlives the job: not when a rank
// fails, not when the job times out, not when the launcher is signalled or even SIGKILLed.
//
// It must not need the library it launches: it links only hcomm_core and hcomm_bootstrap (the
// parsers, and the launcher variables it writes), which need nothing but libc and pthreads.
//
// This file checks what can be checked up front and hands the job to the Launcher; the pieces
// are in run/: options (command line), preflight (program, port, CPUs), rank_process (becoming a
// rank), output (line forwarding), launcher (starting and supervising the ranks).
#include <fcntl.h>
#include <signal.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "core/config_vars.hpp"
#include "core/job_key.hpp"
#include "run/launcher.hpp"
#include "run/options.hpp"
#include "run/output.hpp"
#include "run/preflight.hpp"
#include "usage.hpp"

using namespace hcomm::tools::run;

const hcomm::tools::Program hcomm::tools::kProgram{"hcomm-run", /*runs_as_rank=*/false};

int main(int argc, char** argv) {
  // Pipes opened later must not land on 0-2, or redirecting a rank's output would clobber them.
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) open("/dev/null", O_RDWR);
  }

  Options opts = parse_args(argc, argv);
  if (int err = check_program(opts.command[0])) {
    hcomm::tools::usage_error("cannot execute '" + std::string(opts.command[0]) +
                              "': " + std::strerror(err));
  }
  int port = opts.port;
  if (port == 0) {
    std::optional<int> free_port = find_free_port();
    if (!free_port) {
      note(std::string("cannot find a free port on 127.0.0.1: ") + std::strerror(errno));
      return kExitLauncherError;
    }
    port = *free_port;
  }

  // A job's own secret, unless the caller gave one (the ranks then inherit it).
  std::string secret;
  if (!hcomm::core::env_text(hcomm::core::Var::job_key) &&
      !hcomm::core::env_text(hcomm::core::Var::job_key_file)) {
    auto made = hcomm::core::make_job_secret();
    if (!made.ok()) {
      note(made.status().message());
      return kExitLauncherError;
    }
    secret = made.value();
  }
  Launcher launcher(std::move(opts), "127.0.0.1:" + std::to_string(port), std::move(secret));
  int exit_code = launcher.run();
  if (int sig = launcher.fatal_signal()) {
    // Die of the signal, as the caller (a shell loop, say) expects of a signalled program.
    signal(sig, SIG_DFL);
    sigset_t just_sig;
    sigemptyset(&just_sig);
    sigaddset(&just_sig, sig);
    sigprocmask(SIG_UNBLOCK, &just_sig, nullptr);
    raise(sig);
  }
  return exit_code;
}
