// The loop: one operation at a time, each timed, verified and added to the digest, with the
// transport to every peer watched between iterations. It ends after --iters iterations, when
// the ranks agree that --seconds are up, or at the first failed operation (never waiting longer
// for one than --max-op-ms, or the library's operation timeout).
#pragma once

#include <hcomm/hcomm.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "chaos/options.hpp"
#include "chaos/workload.hpp"

namespace hcomm::tools::chaos {

struct IterationTime {
  double start_s = 0, end_s = 0;  ///< from the start
};

struct TransportChange {
  double t_s = 0;
  uint64_t iteration = 0;  ///< the iteration after which it was seen
  int peer = -1;
  std::string from, to;
};

/// RankInfo::transport as printed: "(no link)" while it is empty (no link up).
const char* transport_name(const std::string& name);
/// "rank 1 on tcp, rank 2 on rdma": where the traffic to each peer goes.
std::string transports_text(const std::map<int, std::string>& transports);

enum class Ending {
  completed,  ///< every iteration ran
  peer_lost,  ///< an operation failed with HCOMM_ERR_PEER_LOST
  failed,     ///< an operation failed otherwise
  hung,       ///< an operation did not complete in time: the communicator was aborted
};
const char* ending_name(Ending e);

/// What one rank's loop did.
struct RunRecord {
  std::vector<IterationTime> iterations;  ///< the ones that completed, in order
  uint64_t checked = 0;                   ///< results compared element by element
  uint64_t wrong_iterations = 0;
  std::vector<Mismatch> mismatches;  ///< the first few
  uint64_t digest = 0;               ///< of every completed iteration's result
  double max_op_ms = 0;              ///< the longest operation (workload or stop vote)
  uint64_t max_op_iteration = 0;
  Ending ending = Ending::completed;
  Status error;  ///< the failed operation's status
  uint64_t error_iteration = 0;
  double error_at_s = 0;  ///< when the failed operation returned
  double duration_s = 0;
  std::map<int, std::string> transports_start, transports_end;  ///< by peer
  std::vector<TransportChange> changes;
};

class Runner {
 public:
  using Clock = std::chrono::steady_clock;

  Runner(Communicator& comm, const Options& o, Workload& w, Clock::time_point start);
  RunRecord run();

 private:
  /// Waits for `work` as the blocking call would, but no longer than --max-op-ms; a hang
  /// aborts the communicator. Records the time taken; returns the operation's status.
  Status finish(const Work& work, const char* what, uint64_t iteration, Clock::time_point began,
                RunRecord* rec);
  /// --seconds: whether the ranks agree to stop now (a 2-int max allreduce); also sets the
  /// number of iterations until the next vote, which rank 0 picks.
  Status vote(uint64_t iteration, bool* stop, uint64_t* next_vote, RunRecord* rec);
  /// Records the failed operation that ends the loop.
  void end_with(const Status& st, uint64_t iteration, Clock::time_point when, RunRecord* rec) const;
  std::map<int, std::string> transports() const;
  void watch_transports(uint64_t iteration, std::map<int, std::string>* now, RunRecord* rec);
  double since_start(Clock::time_point t) const;

  Communicator& comm_;
  const Options& o_;
  Workload& w_;
  Clock::time_point start_;
  std::chrono::milliseconds op_limit_;
  int32_t vote_send_[2] = {0, 0}, vote_recv_[2] = {0, 0};
};

}  // namespace hcomm::tools::chaos
