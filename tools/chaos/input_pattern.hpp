// The inputs of the workload: element `index` of rank `rank`'s input at iteration `iteration`,
// a pure function of the three (and the seed), so that any rank can compute any rank's input and
// an element delivered from the wrong iteration, rank or offset is almost surely wrong.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chaos/options.hpp"

namespace hcomm::tools::chaos {

class InputPattern {
 public:
  InputPattern(DataMode mode, uint64_t seed) : mode_(mode), seed_(seed) {}

  /// exact: an integer in [-100, 100], so that a float32 sum over up to 80000 ranks is exact in
  /// any order. random: a float in [-1, 1) with 24 random bits, whose sums depend on the order.
  float value(int rank, uint64_t iteration, size_t index) const {
    uint64_t x = seed_ ^ (static_cast<uint64_t>(rank) * 0x9E3779B97F4A7C15ULL);
    x += iteration * 0xC2B2AE3D27D4EB4FULL;
    x ^= static_cast<uint64_t>(index) * 0x165667B19E3779F9ULL;
    // splitmix64's finalizer
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    if (mode_ == DataMode::exact) return static_cast<float>(static_cast<int>(x % 201) - 100);
    return static_cast<float>(static_cast<double>(x >> 40) / 8388608.0 - 1.0);
  }

 private:
  DataMode mode_;
  uint64_t seed_;
};

}  // namespace hcomm::tools::chaos
