// hcomm-run: the local launcher, `mpirun -n N` / `torchrun` for one host.
//
// Starts N ranks of a program, tells each its place in the job through HCOMM_* variables, tags
// their output with the rank, and guarantees that no rank outlives the job: not when a rank
// fails, not when the job times out, not when the launcher is signalled or even SIGKILLed.
//
// Standalone on purpose: it must not depend on the library it launches.
//
// How the guarantees are kept:
// - One thread, one poll() loop over every rank's stdout/stderr pipe and a signalfd. SIGCHLD,
//   SIGINT, SIGTERM and SIGHUP stay blocked and are read from the signalfd, so there are no
//   signal handlers and no races between them and the loop.
// - All ranks share one process group, led by rank 0, so one kill(-pgid) reaches every rank and
//   whatever the ranks forked. The group is signalled only while some rank is still unreaped:
//   a member, even a zombie, keeps the group id from being reused by an unrelated group.
// - Every rank has PR_SET_PDEATHSIG(SIGKILL): if the launcher dies without cleaning up, the
//   kernel kills the ranks.

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitLauncherError = 1;  // the launcher itself could not run the job
constexpr int kExitUsage = 2;
constexpr int kExitTimeout = 124;     // as timeout(1)
constexpr int kExitCannotExec = 127;  // as shells
constexpr long kMaxRanks = 65536;     // one host; each rank costs the launcher 2 descriptors
constexpr auto kGracePeriod = std::chrono::seconds(2);  // SIGTERM -> SIGKILL
// An unterminated "line" longer than this is passed on in pieces, so that one rank writing
// without newlines cannot make the launcher buffer without bound.
constexpr size_t kMaxLineBytes = 64 * 1024;

constexpr char kUsage[] =
    R"(Usage: hcomm-run -n N [--timeout S] [--port P] [--bind-to core|none] [--tag-output|--no-tag]
                 [--keep-going] prog [args...]

Starts N ranks of `prog args...` on this host and waits for all of them.

  -n N          number of ranks, 1 to 65536
  --timeout S   stop the job if it runs longer than S seconds (exit 124)
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
HCOMM_ROOT_ADDR=127.0.0.1:PORT in its environment, and /dev/null as stdin. Output lines
are never split or mixed between ranks.

When a rank fails (non-zero exit or a signal), the job times out, or the launcher gets
SIGINT, SIGTERM or SIGHUP, all ranks are signalled (SIGTERM, or the launcher's signal),
then SIGKILLed 2 s later. With --keep-going a failing rank stops nobody: each failure is
reported as it happens, and once every rank is done one line sums up how each ended.
Exit status: 0 when all ranks succeed; the (first) failing rank's exit code, or 128+signal
if it was killed; 124 on timeout (also with --keep-going after a rank failed: the others
did not finish); 127 if prog cannot be executed; 2 on bad usage.
)";

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// One line on the launcher's stderr, written at once so it never lands inside a rank's line.
void note(const std::string& message) {
  std::string line = "hcomm-run: " + message + "\n";
  write_all(STDERR_FILENO, line.data(), line.size());
}

[[noreturn]] void usage_error(const std::string& message) {
  note(message + "\nTry 'hcomm-run --help' for more information.");
  std::exit(kExitUsage);
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

struct Options {
  int ranks = 0;
  double timeout_s = 0;  ///< 0: no timeout
  int port = 0;          ///< 0: pick a free port
  bool tag_output = true;
  bool keep_going = false;  ///< a failing rank does not stop the others
  std::optional<bool> bind_to_core;  ///< unset: bind when there is a CPU per rank
  std::vector<char*> command;  ///< prog and its arguments, null-terminated for execvp
};

// A whole decimal number in [min, max], or nothing.
std::optional<long> parse_long(const char* text, long min, long max) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) return std::nullopt;
  return value;
}

// Options end at the first argument that is not one, or at "--"; the rest is the command.
// Values may be given as "-n 4", "-n4", "--port 5000" or "--port=5000".
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
      write_all(STDOUT_FILENO, kUsage, sizeof(kUsage) - 1);
      std::exit(0);
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
      char* end = nullptr;
      double seconds = std::strtod(text, &end);
      if (end == text || *end != '\0' || !std::isfinite(seconds) || seconds <= 0 || seconds > 1e9) {
        usage_error("--timeout needs a number of seconds > 0, not '" + std::string(text) + "'");
      }
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

// The errno that execvp(prog) would fail with, or 0. Checked up front so that a typo is one
// usage error rather than N failed ranks. Searches like execvp: a name with a '/' is a path,
// anything else is looked up in PATH, whose default is glibc's.
int check_program(const std::string& prog) {
  auto check = [](const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    return access(path.c_str(), X_OK) == 0 ? 0 : errno;
  };
  if (prog.empty()) return ENOENT;
  if (prog.find('/') != std::string::npos) return check(prog);

  const char* path_env = std::getenv("PATH");
  std::string dirs = path_env ? path_env : "/bin:/usr/bin";
  int result = ENOENT;
  for (size_t start = 0;;) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? colon : colon - start);
    int err = check((dir.empty() ? "." : dir) + "/" + prog);
    if (err == 0) return 0;
    // Like execvp: a candidate that exists but cannot run beats "not found".
    if (err != ENOENT && err != ENOTDIR) result = err;
    if (colon == std::string::npos) return result;
    start = colon + 1;
  }
}

// Binds port 0 on the loopback interface and gives the port back. Another process may take it
// before rank 0 binds it; --port is the answer where that matters.
std::optional<int> find_free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) return std::nullopt;
  return ntohs(addr.sin_port);
}

// The launcher's stdout or stderr as seen by the ranks. Once a write fails (say the reader of a
// pipe went away) the rest is dropped: the ranks keep running rather than die of SIGPIPE.
class Sink {
 public:
  explicit Sink(int fd) : fd_(fd) {}
  void write(const std::string& data) {
    if (!broken_ && !data.empty() && !write_all(fd_, data.data(), data.size())) broken_ = true;
  }

 private:
  int fd_;
  bool broken_ = false;
};

// One output stream of one rank (the read end of its stdout or stderr pipe), passed on line by
// line. Each batch of whole lines goes out in one write, so lines never mix between ranks.
class LineForwarder {
 public:
  LineForwarder() = default;
  /// Takes ownership of `fd`, which must be non-blocking; `sink` must outlive this.
  LineForwarder(int fd, Sink* sink, std::string prefix)
      : fd_(fd), sink_(sink), prefix_(std::move(prefix)) {}

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }

  /// Reads what is there without blocking. Returns whether there may be more to read now; at EOF
  /// or on an error the pipe is closed and the last unterminated line passed on.
  bool read_once() {
    if (fd_ < 0) return false;
    char buf[64 * 1024];
    ssize_t n = read(fd_, buf, sizeof(buf));
    if (n > 0) {
      consume(buf, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    close();
    return false;
  }

  /// Passes on what is readable now, without waiting for EOF: a rank's children may hold the
  /// pipe open long after the rank itself is gone.
  void drain() {
    while (read_once()) {
    }
  }

  /// Passes on the last unterminated line, ending it so the next line starts clean, and closes.
  void close() {
    if (!pending_.empty()) sink_->write(prefix_ + pending_ + "\n");
    pending_.clear();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  void consume(const char* data, size_t size) {
    pending_.append(data, size);
    std::string out;
    size_t start = 0;
    for (size_t newline; (newline = pending_.find('\n', start)) != std::string::npos;) {
      out += prefix_;
      out.append(pending_, start, newline + 1 - start);
      start = newline + 1;
    }
    pending_.erase(0, start);
    if (pending_.size() >= kMaxLineBytes) {
      out += prefix_ + pending_ + "\n";
      pending_.clear();
    }
    sink_->write(out);
  }

  int fd_ = -1;
  Sink* sink_ = nullptr;
  std::string prefix_;
  std::string pending_;  ///< the unterminated tail of what was read
};

struct Rank {
  pid_t pid = -1;
  bool running = false;  ///< started and not yet reaped
  LineForwarder out;
  LineForwarder err;
  std::string failure;  ///< --keep-going: how it failed ("exited with code 3"); empty: it did not
};

// What a forked child needs to become a rank; everything is prepared before fork.
struct ChildSetup {
  pid_t launcher;  ///< to detect that the launcher died before PR_SET_PDEATHSIG took effect
  pid_t pgid;      ///< 0 for rank 0, which leads the group
  int stdin_fd, stdout_fd, stderr_fd;
  int status_fd;  ///< close-on-exec; gets errno if the rank cannot be started
  const sigset_t* signal_mask;
  const struct sigaction* sigpipe_action;
  char* const* argv;
  char* const* envp;
  const cpu_set_t* cpus;  ///< where the rank runs; null: anywhere
};

[[noreturn]] void become_rank(const ChildSetup& s) {
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

// The launcher's environment minus stale placement variables, plus the job's. Only the
// rank-specific entries differ between ranks.
std::vector<std::string> rank_environment(int rank, int ranks, const std::string& root_addr) {
  static const char* const kOwned[] = {"HCOMM_RANK=", "HCOMM_WORLD_SIZE=", "HCOMM_LOCAL_RANK=",
                                       "HCOMM_LOCAL_SIZE=", "HCOMM_ROOT_ADDR="};
  std::vector<std::string> env;
  for (char** entry = environ; *entry; ++entry) {
    bool owned = false;
    for (const char* prefix : kOwned)
      owned = owned || std::strncmp(*entry, prefix, std::strlen(prefix)) == 0;
    if (!owned) env.emplace_back(*entry);
  }
  env.push_back("HCOMM_RANK=" + std::to_string(rank));
  env.push_back("HCOMM_WORLD_SIZE=" + std::to_string(ranks));
  env.push_back("HCOMM_LOCAL_RANK=" + std::to_string(rank));
  env.push_back("HCOMM_LOCAL_SIZE=" + std::to_string(ranks));
  env.push_back("HCOMM_ROOT_ADDR=" + root_addr);
  return env;
}

class Launcher {
 public:
  Launcher(Options opts, std::string root_addr)
      : opts_(std::move(opts)), root_addr_(std::move(root_addr)), ranks_(opts_.ranks) {}
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  /// Runs the job until every started rank is reaped; returns the launcher's exit status.
  int run();
  /// The signal that stopped the job, which the launcher should die of too; 0 if none.
  int fatal_signal() const { return fatal_signal_; }

 private:
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
  // Ranks that busy poll must not share a core while another idles: the scheduler does not
  // always spread them (2 ranks ran 5x slower in about one start of three here).
  cpu_set_t allowed;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  const bool enough = cpus.size() >= static_cast<size_t>(opts_.ranks);
  if (opts_.bind_to_core.value_or(enough)) {
    if (!enough) {
      note("--bind-to core: " + std::to_string(opts_.ranks) + " ranks but only " +
           std::to_string(cpus.size()) + " CPUs; ranks share them round robin");
      for (int r = 0; !cpus.empty() && r < opts_.ranks; ++r)
        rank_cpus_.push_back(cpus[static_cast<size_t>(r) % cpus.size()]);
    } else {
      rank_cpus_.assign(cpus.begin(), cpus.begin() + opts_.ranks);
    }
  }
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
  std::vector<std::string> env = rank_environment(rank, opts_.ranks, root_addr_);
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

}  // namespace

int main(int argc, char** argv) {
  // Pipes opened later must not land on 0-2, or redirecting a rank's output would clobber them.
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) open("/dev/null", O_RDWR);
  }

  Options opts = parse_args(argc, argv);
  if (int err = check_program(opts.command[0])) {
    usage_error("cannot execute '" + std::string(opts.command[0]) + "': " + std::strerror(err));
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

  Launcher launcher(std::move(opts), "127.0.0.1:" + std::to_string(port));
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
