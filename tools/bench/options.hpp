// hcomm-bench's command line: the options, their parsing and the sweep of sizes they describe.
// Usage errors end the process through tools::usage_error (usage.hpp), reported by one rank only.
#pragma once

#include <hcomm/hcomm.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace hcomm::tools::bench {

constexpr int kExitWrong = 1;  // also: a library error; bad usage: tools::kExitUsage

struct Options {
  std::string op = "allreduce";
  size_t min_bytes = 8;
  size_t max_bytes = size_t{64} << 20;
  size_t step_factor = 2;
  size_t step_bytes = 0;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  DataType dtype = DataType::float32;
  ReduceOp redop = ReduceOp::sum;
  int root = 0;
  std::string algo;              // empty: the library's choice
  bool has_compression = false;  // --compression given: set on the communicator after joining
  Compression compression = Compression::none;
  std::string json_path;
  // Tenant mode.
  bool has_qos = false;  // --qos given: set on the communicator right after it is created
  QosClass qos;
  double duration_s = 0;  // -T: > 0 runs the first size back to back this long, not the sweep
};

// Exits on a usage error (an unknown operation, an algorithm it does not have, ...), and after
// printing the usage text for -h.
Options parse_options(int argc, char** argv);

// The sizes to run, nccl-tests' loop: from -b while <= -e, times -f or plus -i.
std::vector<size_t> size_sweep(const Options& o);

}  // namespace hcomm::tools::bench
