// The fault schedule: what --fault and --flap describe, as a list of faults in time order. Every
// rank reads the same command line, so every rank knows every fault's time; only the rank that
// injects a fault acts on it (injector.hpp).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hcomm::tools::chaos {

struct Fault {
  enum class Kind {
    command,  ///< a shell command, and optionally an undo command `for_s` later
    stop,     ///< SIGSTOP a rank, SIGCONT `for_s` later
    kill,     ///< SIGKILL a rank
  };
  Kind kind = Kind::command;
  std::string label;  ///< "fault 2" (2nd --fault), "flap 1.3" (3rd down phase of the 1st --flap)
  double at_s = 0;    ///< from the start barrier
  std::optional<double> for_s;
  std::string command;  ///< command: what runs at at_s
  std::string undo;     ///< command: what runs at at_s + for_s; "" none
  int target = -1;      ///< stop, kill: the rank signalled
  int injector = -1;    ///< the rank that runs or signals it (set by FaultPlan::resolve)

  /// When the fault is over: its undo, SIGCONT, or at_s for an instant one.
  double end_s() const { return at_s + for_s.value_or(0); }
  /// Whether something runs at end_s() (an undo command, SIGCONT).
  bool has_end_step() const { return kind == Kind::stop || !undo.empty(); }
  /// "SIGSTOP rank 1 (sent by rank 0) at 2.000 s, SIGCONT at 4.000 s", ...
  std::string describe() const;
};

class FaultPlan {
 public:
  /// Reads the specs of --fault and --flap; a bad one is a usage error (the process exits).
  static FaultPlan parse(const std::vector<std::string>& faults,
                         const std::vector<std::string>& flaps);

  /// Checks the ranks named against the world size and picks the default injecting ranks; a
  /// usage error otherwise.
  void resolve(int world_size);

  const std::vector<Fault>& faults() const { return faults_; }
  bool empty() const { return faults_.empty(); }
  bool has_kill() const;
  /// From the first fault's time to the last one's end; nullopt without faults.
  std::optional<std::pair<double, double>> span() const;
  /// What a HCOMM_ERR_PEER_LOST seen at `t_s` is measured from: the time of the last kill at or
  /// before it, else of the last fault at or before it, else the start (0).
  double loss_reference_s(double t_s) const;
  /// Whether `rank` is the one fault `i` stops or kills: it cannot judge that fault's detection.
  bool is_victim(size_t i, int rank) const;

 private:
  std::vector<Fault> faults_;
};

}  // namespace hcomm::tools::chaos
