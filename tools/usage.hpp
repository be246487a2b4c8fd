// The one way the tools end on bad usage: "<tool>: <message> (-h for help)" on stderr and exit
// status 2, and the one way they print their help. hcomm-bench, hcomm-chaos and hcomm-info run as
// every rank of a launch, and every rank parses the same arguments: only the lead rank prints.
// hcomm-run is no rank of anything: it always prints.
#pragma once

#include <string>

namespace hcomm::tools {

constexpr int kExitUsage = 2;

/// The program, for its messages. Each tool's main file defines kProgram.
struct Program {
  const char* name;   ///< "hcomm-bench"
  bool runs_as_rank;  ///< started once per rank by a launcher: only the lead rank prints
};
extern const Program kProgram;

/// Whether this process is rank 0 of a launch, or not launched at all, as the launcher's
/// variables say (bootstrap::read_launch_env(), the one reading of them). Variables that do not
/// parse count as rank 0, so that the error about them reaches someone.
bool is_lead_rank();

/// Prints "<kProgram.name>: <message> (-h for help)" on stderr (on the lead rank only, for a
/// program that runs as a rank) and exits with kExitUsage. Not for use in a forked child.
[[noreturn]] void usage_error(const std::string& message);

/// Prints `text` on stdout (on the lead rank only, for a program that runs as a rank) and exits
/// with 0: what -h does.
[[noreturn]] void print_help(const std::string& text);

}  // namespace hcomm::tools
