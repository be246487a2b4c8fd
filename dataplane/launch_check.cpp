#include "dataplane/launch_check.hpp"

#include <unistd.h>

#include <algorithm>

namespace hcomm::dataplane {
namespace {

std::chrono::milliseconds until(LaunchCheck::Clock::time_point deadline) {
  return std::max(
      std::chrono::milliseconds(1),
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - LaunchCheck::Clock::now()));
}

}  // namespace

Status LaunchCheck::claim(Clock::time_point deadline) {
  const std::string me = std::to_string(rank_);
  auto n = store_.add(prefix_ + "claims/" + me, 1);
  if (!n.ok()) return n.status();
  const std::string self = "pid " + std::to_string(getpid()) + " on " + host_name_;
  Status st = store_.set(prefix_ + "claim/" + me + "/" + std::to_string(n.value()), self);
  if (!st.ok()) return st;
  if (n.value() > 1)
    return reject("rank " + me + " is claimed by two processes: " + claimant(rank_, 1, deadline) +
                  " and " + self +
                  ": give each process its own rank (HCOMM_RANK, RANK, OMPI_COMM_WORLD_RANK or "
                  "SLURM_PROCID)");
  if (rank_ == 0) return store_.set(prefix_ + "size", std::to_string(world_size_));
  auto size = store_.get(prefix_ + "size", until(deadline));
  if (!size.ok()) return size.status();
  if (size.value() != std::to_string(world_size_))
    return reject("the ranks disagree on the world size: rank 0 (" + claimant(0, 1, deadline) +
                  ") says " + size.value() + ", rank " + me + " (" + self + ") says " +
                  std::to_string(world_size_) +
                  ": launch every rank with the same HCOMM_WORLD_SIZE (or WORLD_SIZE, "
                  "OMPI_COMM_WORLD_SIZE, SLURM_NTASKS)");
  return {};
}

Status LaunchCheck::posted_error() {
  auto posted = store_.get(error_key(), std::chrono::milliseconds(0));
  if (posted.ok()) return Status{HCOMM_ERR_INVALID_ARG, posted.value()};
  return posted.status().code() == HCOMM_ERR_TIMEOUT ? Status{} : posted.status();
}

Status LaunchCheck::reject(const std::string& message) {
  // The first mistake posted is the one every rank reports.
  auto first = store_.add(prefix_ + "launch_errors", 1);
  if (first.ok() && first.value() == 1) (void)store_.set(error_key(), message);
  return Status{HCOMM_ERR_INVALID_ARG, message};
}

std::string LaunchCheck::claimant(int rank, int n, Clock::time_point deadline) {
  auto v = store_.get(prefix_ + "claim/" + std::to_string(rank) + "/" + std::to_string(n),
                      std::min(until(deadline), std::chrono::milliseconds(2000)));
  return v.ok() ? v.value() : "a process that did not say which";
}

}  // namespace hcomm::dataplane
