// Runs one operation at one size on every rank: times it and, with -c 1, checks every element of
// its result. Each size yields a Row, the same on every rank.
#pragma once

#include <hcomm/hcomm.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/inputs.hpp"
#include "bench/op_table.hpp"
#include "bench/options.hpp"

namespace hcomm::tools::bench {

struct Row {
  size_t bytes = 0, count = 0;
  std::string algo;
  double time_us = 0, algbw = 0, busbw = 0;
  int64_t wrong = -1;  // -1: not checked
  /// Payload bytes one operation sends between ranks of different hosts, all ranks together
  /// (-1: every rank on one host). What topology-aware algorithms are meant to reduce.
  int64_t cross_host_bytes = -1;
  /// Bytes this rank's frames carried / their payload bytes over the timed iterations (-1: not
  /// measured, without --compression).
  double wire_ratio = -1;
  /// fp16/bf16: the largest error of a checked element, all ranks, and the bound it is held to
  /// (-1: not measured).
  double max_error = -1, error_bound = -1;
};

/// One rank's figures of a tenant-mode run (-T): the first size back to back for a duration.
struct TimedRun {
  int rank = 0;
  int64_t iterations = 0;  // the same on every rank
  double elapsed_s = 0;    // this rank's clock, from the starting barrier to the agreed stop
  /// Payload bytes this rank sent to ranks on other hosts during the run (-1: none there).
  int64_t wire_bytes = -1;
  double wire_gbps = 0;  // wire_bytes * 8 / elapsed_s / 1e9 (0 when wire_bytes is -1)
  /// Of this rank's operations, each timed alone. Back to back, the median is that of the fast
  /// periods (a stall holds up few operations); the mean shows how long the stalls were.
  double median_us = 0, p99_us = 0, mean_us = 0;
  double start_unix = 0, end_unix = 0;  // wall clock (s) of the run's start and end
  /// (unix time in s, wire bytes since the start) at the start, after an iteration about every
  /// 100 ms, and at the end: the rate over any window, e.g. the one all tenants share.
  std::vector<std::pair<double, int64_t>> samples;
};

// A failing operation ends the process with kExitWrong: a benchmark cannot go on without it.
class Runner {
 public:
  Runner(Communicator& comm, const Options& o, const OpSpec& spec);

  Row run(size_t nominal_bytes);
  /// The size and count columns `nominal_bytes` gives (rounded to whole elements / blocks).
  Row shape(size_t nominal_bytes) const;

  /// Tenant mode: warm-up, a barrier, then the operation at `nominal_bytes` back to back until
  /// rank 0's clock passes `seconds` (every rank stops after the same iteration: rank 0
  /// broadcasts a stop flag every ~20 ms of iterations). Then, with -c 1, one checked run.
  /// Collective; every rank gets every rank's figures, by rank, and the wrong count in *wrong.
  std::vector<TimedRun> run_timed(size_t nominal_bytes, double seconds, int64_t* wrong);

 private:
  Case case_for(size_t nominal_bytes) const;
  size_t bytes_of(const Case& c) const;
  [[noreturn]] void fail(const char* what, const Status& st) const;
  void run_once(const Case& c, const Buffers& b);
  void barrier();
  Buffers allocate(const Case& c) const;
  void fill(const Case& c, const Buffers& b, bool sentinels) const;
  double measure(const Case& c, const Buffers& b, int64_t* cross_host_bytes);
  /// Bytes this rank has sent so far to ranks on other hosts; -1 when all share its host.
  int64_t sent_across_hosts() const;
  int64_t check(const Case& c, const Buffers& b, Row* row = nullptr);
  std::vector<TimedRun> gather(const TimedRun& mine);

  Communicator& comm_;
  const Options& o_;
  const OpSpec& spec_;
  Case base_;
};

}  // namespace hcomm::tools::bench
