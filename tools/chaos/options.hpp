// hcomm-chaos's command line: the workload, the faults (as written; fault_plan.hpp reads them),
// the checks that decide the exit status, and the usage text. Usage errors end the process through
// tools::usage_error (usage.hpp), reported by one rank only (every rank parses the same arguments).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <hcomm/config.hpp>

#include "usage.hpp"

namespace hcomm::tools::chaos {

constexpr int kExitFailed = 1;  // a check failed, a result was wrong, an operation failed

enum class DataMode {
  exact,   ///< small integers: every rank computes the exact expected result
  random,  ///< seeded pseudo-random floats: a digest compared with a fault-free run's
};

struct Options {
  // ---- workload
  std::string op = "allreduce";
  size_t bytes = size_t{1} << 20;
  uint64_t iters = 0;      ///< 0: run for `seconds`
  double seconds = 10;     ///< used when iters == 0
  double interval_ms = 0;  ///< pause between two iterations
  DataMode data = DataMode::exact;
  /// Compare every Nth result element by element (the digest covers every one); 1: all.
  uint64_t check_every = 1;
  uint64_t seed = 1;
  int root = 0;
  std::string algo;  ///< empty: the library's choice
  hcomm::Compression compression = hcomm::Compression::none;
  /// --reference-s: first run the workload this long over the fallback's network alone (a
  /// communicator of its own with every link there, no failover); 0: no reference.
  double reference_s = 0;

  // ---- faults, as written on the command line
  std::vector<std::string> faults;
  std::vector<std::string> flaps;

  // ---- checks
  std::optional<uint64_t> expect_digest;
  bool expect_peer_lost = false;
  std::optional<double> max_detect_ms;
  std::optional<double> max_op_ms;
  std::optional<uint64_t> expect_failovers;
  std::optional<uint64_t> expect_failbacks;
  std::optional<uint64_t> max_failovers;
  std::vector<std::string> expect_events;  ///< link event kinds that must occur
  bool expect_detection = false;
  std::string expect_final_transport;
  /// Throughput during the faults (bytes over the time spent in operations) at least this % of
  /// the reference's (--reference-s).
  std::optional<double> min_during_pct;
  /// At most this many traffic switches (failovers and failbacks) per fault, on each rank.
  std::optional<uint64_t> max_switches;

  std::string json_path;
};

/// Exits on a usage error, and after printing the usage text for -h.
Options parse_options(int argc, char** argv);

/// A duration as core::parse_duration reads it ("2.5", "2.5s", "500ms"), in seconds; a bare
/// number is seconds. nullopt for anything else.
std::optional<double> parse_seconds(const std::string& text);

/// The same in milliseconds; a bare number is milliseconds ("250", "1.5s").
std::optional<double> parse_ms(const std::string& text);

}  // namespace hcomm::tools::chaos
