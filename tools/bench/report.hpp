// What rank 0 shows: the nccl-tests style table on stdout, a progress bar on stderr for long
// runs, and the same results as JSON (-J).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "bench/op_table.hpp"
#include "bench/options.hpp"
#include "bench/runner.hpp"

namespace hcomm::bench {

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

 private:
  const char* redop_name() const;
  int root() const;

  const Options& o_;
  const OpSpec& spec_;
  int n_;
  std::vector<Row> rows_;
};

}  // namespace hcomm::bench
