// Catches launching mistakes at the rendezvous, before any link is made: a rank claimed by two
// processes, and ranks that disagree on the world size. Keys (under the communicator's prefix):
//   claims/<rank>        a counter: how many processes claimed <rank>
//   claim/<rank>/<n>     "pid host" of its n-th claimant
//   size                 rank 0's world size
//   launch_error         the first mistake found, as every rank reports it
// Whoever finds a mistake posts it in launch_error and fails; the others find it while they wait
// for the rest (posted_error()) and fail with the same message. A duplicate that arrives after
// the others have finished the rendezvous fails at once, and the communicator they made aborts
// with its message when its observer sees the key (observe/comm_trace.hpp). Creating thread.
#pragma once

#include <chrono>
#include <string>

#include "bootstrap/store_client.hpp"
#include "hcomm/status.hpp"

namespace hcomm::dataplane {

class LaunchCheck {
 public:
  using Clock = std::chrono::steady_clock;

  LaunchCheck(bootstrap::StoreClient& store, std::string prefix, int rank, int world_size,
              std::string host_name)
      : store_(store),
        prefix_(std::move(prefix)),
        rank_(rank),
        world_size_(world_size),
        host_name_(std::move(host_name)) {}

  /// Registers this process as its rank's claimant and compares its world size with rank 0's
  /// (waiting for rank 0 until `deadline`). HCOMM_ERR_INVALID_ARG naming both claimants, or both
  /// sizes and ranks, on a mistake.
  Status claim(Clock::time_point deadline);
  /// The mistake another rank posted, as an HCOMM_ERR_INVALID_ARG; OK when none is.
  Status posted_error();
  /// Where the mistake is posted: a communicator already made watches it (observe/), so that a
  /// claimant arriving after the others finished is rejected on every process too.
  std::string error_key() const { return prefix_ + "launch_error"; }

 private:
  /// Posts `message` as the launch error (unless one is posted already) and returns it.
  Status reject(const std::string& message);
  /// "pid 123 on host", from claim/<rank>/<n>.
  std::string claimant(int rank, int n, Clock::time_point deadline);

  bootstrap::StoreClient& store_;
  const std::string prefix_;
  const int rank_;
  const int world_size_;
  const std::string host_name_;
};

}  // namespace hcomm::dataplane
