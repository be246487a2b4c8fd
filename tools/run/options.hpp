// hcomm-run's command line: the options, their parsing and the usage text, and the exit statuses
// the launcher ends with. Bad usage ends the process through tools::usage_error (exit 2).
#pragma once

#include <optional>
#include <vector>

namespace hcomm::tools::run {

constexpr int kExitLauncherError = 1;  ///< the launcher itself could not run the job
constexpr int kExitTimeout = 124;      ///< as timeout(1)
constexpr int kExitCannotExec = 127;   ///< as shells
constexpr long kMaxRanks = 65536;      ///< one host; each rank costs the launcher 2 descriptors

struct Options {
  int ranks = 0;
  double timeout_s = 0;  ///< 0: no timeout
  int port = 0;          ///< 0: pick a free port
  bool tag_output = true;
  bool keep_going = false;           ///< a failing rank does not stop the others
  std::optional<bool> bind_to_core;  ///< unset: bind when there is a CPU per rank
  /// prog and its arguments, null-terminated for execvp; they point into argv, which must
  /// outlive the Options.
  std::vector<char*> command;
};

/// Options end at the first argument that is not one, or at "--"; the rest is the command.
/// Values may be given as "-n 4", "-n4", "--port 5000" or "--port=5000". Exits on bad usage
/// (status 2) and after printing the usage text for -h.
Options parse_args(int argc, char** argv);

}  // namespace hcomm::tools::run
