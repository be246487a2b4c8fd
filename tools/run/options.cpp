// The usage text and the parsing of hcomm-run's options; numbers and durations are read with
// core/parse, as everywhere else.
#include "run/options.hpp"

#include <chrono>
#include <string>

#include "core/parse.hpp"
#include "usage.hpp"

namespace hcomm::tools::run {
namespace {

constexpr char kUsage[] =
    R"(Usage: hcomm-run -n N [--timeout S] [--port P] [--bind-to core|none] [--tag-output|--no-tag]
                 [--keep-going] prog [args...]

Starts N ranks of `prog args...` on this host and waits for all of them.

  -n N          number of ranks, 1 to 65536
  --timeout S   stop the job if it runs longer than S seconds (exit 124); a unit may
                follow: 90, 1.5m, 500ms
  --port P      port of HCOMM_ROOT_ADDR (default: a free port on 127.0.0.1)
  --bind-to W   core: rank i runs on the i-th CPU this launcher may use (as mpirun binds
                small jobs); none: wherever the kernel puts it. Default: core when there
                are at least N such CPUs, none otherwise
  --tag-output  prefix every output line with "[rank] " (default)
  --no-tag      pass output lines on without the prefix
  --keep-going  when a rank fails, leave the others running and wait for all of them
                (still under --timeout); for fault tests whose survivors must finish
  -h, --help    print this help

Each rank gets HCOMM_RANK, HCOMM_WORLD_SIZE, HCOMM_LOCAL_RANK, HCOMM_LOCAL_SIZE and
HCOMM_ROOT_ADDR=127.0.0.1:PORT in its environment, and /dev/null as stdin. Unless
HCOMM_JOB_KEY or HCOMM_JOB_KEY_FILE is set already, every rank also gets HCOMM_JOB_KEY,
a random secret made for this job: only its ranks can join it. Output lines are never
split or mixed between ranks.

When a rank fails (non-zero exit or a signal), the job times out, or the launcher gets
SIGINT, SIGTERM or SIGHUP, all ranks are signalled (SIGTERM, or the launcher's signal),
then SIGKILLed 2 s later. With --keep-going a failing rank stops nobody: each failure is
reported as it happens, and once every rank is done one line sums up how each ended.
Exit status: 0 when all ranks succeed; the (first) failing rank's exit code, or 128+signal
if it was killed; 124 on timeout (also with --keep-going after a rank failed: the others
did not finish); 127 if prog cannot be executed; 2 on bad usage.
)";

// A whole decimal number in [min, max], or nothing.
std::optional<long> parse_long(const char* text, long min, long max) {
  const auto value = core::parse_integer(text);
  if (!value || *value < min || *value > max) return std::nullopt;
  return static_cast<long>(*value);
}

}  // namespace

Options parse_args(int argc, char** argv) {
  Options opts;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;

    std::string name = arg;
    const char* inline_value = nullptr;
    if (arg.compare(0, 2, "--") == 0 && arg.find('=') != std::string::npos) {
      name = arg.substr(0, arg.find('='));
      inline_value = argv[i] + name.size() + 1;
    } else if (arg.compare(0, 2, "-n") == 0 && arg.size() > 2) {
      name = "-n";
      inline_value = argv[i] + 2;
    }
    auto value = [&]() -> const char* {
      if (inline_value) return inline_value;
      if (i + 1 >= argc) usage_error("option '" + name + "' needs a value");
      return argv[++i];
    };
    auto no_value = [&]() {
      if (inline_value) usage_error("option '" + name + "' takes no value");
    };

    if (name == "-h" || name == "--help") {
      print_help(kUsage);
    } else if (name == "-n") {
      const char* text = value();
      auto ranks = parse_long(text, 1, kMaxRanks);
      if (!ranks) {
        usage_error("-n needs a number of ranks in 1.." + std::to_string(kMaxRanks) + ", not '" +
                    text + "'");
      }
      opts.ranks = static_cast<int>(*ranks);
    } else if (name == "--timeout") {
      const char* text = value();
      const auto timeout = core::parse_duration(text, std::chrono::seconds(1));
      const double seconds = timeout ? std::chrono::duration<double>(*timeout).count() : 0;
      if (seconds <= 0 || seconds > 1e9)
        usage_error("--timeout needs a number of seconds > 0, not '" + std::string(text) + "'");
      opts.timeout_s = seconds;
    } else if (name == "--port") {
      const char* text = value();
      auto port = parse_long(text, 1, 65535);
      if (!port)
        usage_error("--port needs a port number 1..65535, not '" + std::string(text) + "'");
      opts.port = static_cast<int>(*port);
    } else if (name == "--bind-to") {
      const std::string where = value();
      if (where != "core" && where != "none")
        usage_error("--bind-to takes core or none, not '" + where + "'");
      opts.bind_to_core = where == "core";
    } else if (name == "--tag-output") {
      no_value();
      opts.tag_output = true;
    } else if (name == "--no-tag") {
      no_value();
      opts.tag_output = false;
    } else if (name == "--keep-going") {
      no_value();
      opts.keep_going = true;
    } else {
      usage_error("unknown option '" + arg + "'");
    }
  }
  if (opts.ranks == 0) usage_error("missing -n N, the number of ranks");
  if (i >= argc) usage_error("missing the program to run");
  opts.command.assign(argv + i, argv + argc);
  opts.command.push_back(nullptr);
  return opts;
}

}  // namespace hcomm::tools::run
