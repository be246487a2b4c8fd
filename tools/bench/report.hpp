// What rank 0 shows: the nccl-tests style table on stdout, a progress bar on stderr for long
// runs, and the same results as JSON (-J).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/op_table.hpp"
#include "bench/options.hpp"
#include "bench/runner.hpp"

namespace hcomm::tools::bench {

// A progress bar on stderr, only when it is a terminal; erased before each row is printed.
class Progress {
 public:
  Progress(bool enabled, size_t total);
  void update(size_t done);
  void erase();

 private:
  bool enabled_;
  size_t total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  bool shown_ = false;
};

class Report {
 public:
  Report(const Options& o, const OpSpec& spec, int world_size);

  void header() const;
  void row(const Row& r);  // prints it and keeps it for the footer and the JSON
  int64_t total_wrong() const;
  void footer() const;
  bool write_json(FILE* f) const;  // false on a write error

  /// The class the communicator runs in and the link it shares ("# qos: ..."; JSON: "qos").
  void qos(const QosClass& q, double link_gbps);
  /// Tenant mode (-T): every rank's figures, then the wrong count and the footer; the JSON then
  /// holds these instead of the rows.
  void timed(size_t bytes, size_t count, const std::vector<TimedRun>& ranks, int64_t wrong);

 private:
  const char* redop_name() const;
  int root() const;
  bool write_json_timed(FILE* f, const std::string& common) const;

  const Options& o_;
  const OpSpec& spec_;
  int n_;
  std::vector<Row> rows_;
  bool has_qos_ = false;
  QosClass qos_;
  double link_gbps_ = 0;
  bool timed_ = false;
  size_t timed_bytes_ = 0, timed_count_ = 0;
  std::vector<TimedRun> timed_ranks_;
  int64_t timed_wrong_ = -1;
};

}  // namespace hcomm::tools::bench
