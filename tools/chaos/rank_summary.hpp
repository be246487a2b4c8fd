// The figures of one rank that the checks over all ranks need, as a fixed-length array of
// doubles, so that rank 0 can gather every rank's with one allgather; and the gathering itself.
#pragma once

#include <hcomm/hcomm.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chaos/analysis.hpp"
#include "chaos/runner.hpp"

namespace hcomm::tools::chaos {

constexpr size_t kEventKinds = 7;  ///< LinkEvent::Kind has 7 values, 0..6

struct RankSummary {
  int rank = -1;
  uint64_t iterations = 0, checked = 0, wrong_iterations = 0;
  uint64_t failovers = 0, failbacks = 0, reconnects = 0, peers_lost = 0;
  std::array<uint64_t, kEventKinds> events{};  ///< by LinkEvent::Kind
  uint64_t digest = 0;
  double max_op_ms = 0, duration_s = 0;
  Ending ending = Ending::completed;
  /// By fault: this rank's detection and recovery times (NaN: none, or it was the victim).
  std::vector<double> detection_ms, recovery_ms;

  static RankSummary of(int rank, const RunRecord& rec, const FailoverStats& stats,
                        const Analysis& a);
  std::vector<double> encode() const;
  static RankSummary decode(const double* data, size_t faults);
  static size_t encoded_size(size_t faults);
};

struct Gathered {
  std::vector<RankSummary> summaries;  ///< by rank
  std::vector<std::string> json;       ///< by rank; empty unless asked for
};

/// Every rank's summary (and JSON text when `with_json`), by allgather over `comm`; every rank
/// must call it. Nullopt, with the reason printed, when an operation fails or takes longer than
/// `limit` (the communicator is then aborted).
std::optional<Gathered> gather_all(Communicator& comm, const RankSummary& mine,
                                   const std::string& my_json, bool with_json, size_t faults,
                                   std::chrono::milliseconds limit);

}  // namespace hcomm::tools::chaos
