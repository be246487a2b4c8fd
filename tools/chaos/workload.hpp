// The collective that hcomm-chaos runs in a loop: its buffers, each iteration's input, starting
// it, and checking its result, bit for bit, against what every rank's inputs imply
// (hcomm_reference, reference/).
#pragma once

#include <hcomm/hcomm.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "chaos/input_pattern.hpp"
#include "chaos/options.hpp"

namespace hcomm::tools::chaos {

/// The first wrong element of one iteration's result, and how many were wrong.
struct Mismatch {
  uint64_t iteration = 0;
  size_t index = 0;  ///< in the result buffer
  size_t wrong = 0;
  float got = 0, want = 0;
};

class Workload {
 public:
  /// Usage errors (a size too small for the op, a root out of range) end the process.
  Workload(const Options& o, int rank, int world_size);

  const std::string& op() const { return op_; }
  size_t count() const { return count_; }  ///< the count argument of the call
  /// The operation's size: its larger buffer (allgather: the gathered one), as hcomm-bench.
  size_t bytes() const { return result_elems_ * sizeof(float); }
  /// Whether results are checked element by element (not under fp16/bf16 compression, whose
  /// rounding the digest checks; not for random data on more than 2 ranks: an allreduce result
  /// depends on the reduction order, which the library chooses).
  bool checks_elements() const;

  /// Writes iteration `it`'s input, and a sentinel (a NaN) wherever the result must land.
  void prepare(uint64_t it);
  Work start(Communicator& comm);
  /// Compares iteration `it`'s result with what it must be; nullopt when right (or unchecked).
  std::optional<Mismatch> verify(uint64_t it) const;

  const void* result() const { return recv_.get(); }
  size_t result_bytes() const { return bytes(); }

 private:
  struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
  };
  using Buffer = std::unique_ptr<float, FreeDeleter>;
  static Buffer allocate(size_t elems);
  float expected(uint64_t it, size_t k) const;

  std::string op_;
  int rank_, n_, root_;
  DataMode data_;
  bool lossy_;  // fp16/bf16: results are rounded, only their digest is compared
  InputPattern pattern_;
  size_t count_ = 0, send_elems_ = 0, result_elems_ = 0;
  Buffer send_, recv_;
};

}  // namespace hcomm::tools::chaos
