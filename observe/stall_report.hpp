// The stall report's line: what an operation waiting past HCOMM_STALL_WARN_MS waits for, named by
// rank, from the ranks' published progress (ProgressBoard). Pure: the observer gathers the facts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "observe/op_record.hpp"
#include "observe/progress_board.hpp"

namespace hcomm::observe {

struct StallFacts {
  int rank = 0;                                   ///< this rank
  int64_t now_ns = 0;                             ///< this rank's clock
  int64_t offset_ns = 0;                          ///< rank 0's clock minus this rank's
  std::vector<std::optional<Progress>> progress;  ///< by rank; empty when unknown
  std::string progress_error;                     ///< why it is unknown
  std::vector<std::string> transport_to;          ///< by rank: the link's protocol
};

/// The ranks `op` waits for: a collective, those whose last published collective is older than
/// it (or who published none); a send or receive, its peer. Empty when every rank entered it.
std::vector<int> stalled_on(const OpRecord& op, const StallFacts& facts);

/// "allreduce #1042 (4 MiB float32) waiting 10.0 s for rank 2 (last heard 10.4 s ago on shm;
/// its last operation: allreduce #1041, completed)".
std::string stall_line(const OpRecord& op, const StallFacts& facts);

/// "allreduce #1042" or "recv from rank 3 (tag 5)".
std::string op_name(const OpRecord& op);

}  // namespace hcomm::observe
