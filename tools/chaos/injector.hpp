// Carries out this rank's part of the fault schedule on a thread of its own, so that running a
// command or signalling a rank never holds up the workload: at each fault's time it runs the
// command (/bin/sh -c) or sends the signal, and at its end the undo command or SIGCONT.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chaos/fault_plan.hpp"

namespace hcomm::tools::chaos {

/// One thing the injector did (or failed to do).
struct Injection {
  size_t fault = 0;      ///< index into FaultPlan::faults()
  bool end = false;      ///< the undo / SIGCONT rather than the fault itself
  double due_s = 0;      ///< when it was scheduled
  double started_s = 0;  ///< when it began, from the start
  double took_ms = 0;    ///< how long the command ran (0 for a signal)
  bool ok = false;
  std::string what;   ///< "SIGSTOP pid 1234 (rank 1)", "sh -c 'nft ...'"
  std::string error;  ///< why it failed
};

class Injector {
 public:
  using Clock = std::chrono::steady_clock;

  /// `pids`: every rank's process id, by rank; `start`: the common start.
  Injector(const FaultPlan& plan, int rank, std::vector<pid_t> pids, Clock::time_point start);
  ~Injector();
  Injector(const Injector&) = delete;
  Injector& operator=(const Injector&) = delete;

  /// Starts the thread when this rank injects anything.
  void start();
  /// The run is over: faults not begun yet are skipped, the ends of faults begun (undo, SIGCONT)
  /// are done now, and the thread is joined.
  void finish();

  /// After finish(): what was done, in order.
  const std::vector<Injection>& done() const { return done_; }
  /// After finish(): each problem in one line (a command that failed, a fault never reached, an
  /// undo done late); empty when the schedule ran as written.
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  struct Step {
    double due_s;
    size_t fault;
    bool end;
  };

  void run();
  /// Carries out one step (late: at the end of the run rather than when it was due).
  void perform(const Step& step, bool late);
  Injection run_command(const std::string& command);
  Injection send_signal(int rank, int sig);
  double now_s() const;

  const FaultPlan& plan_;
  int rank_;
  std::vector<pid_t> pids_;
  Clock::time_point start_;
  std::vector<Step> steps_;
  std::vector<Injection> done_;
  std::vector<std::string> problems_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

}  // namespace hcomm::tools::chaos
