// One size of one operation (a Case): its geometry, the input every rank gets, and what each
// element of the result must be, from hcomm_reference (reference/), independently of the
// library.
#pragma once

#include <hcomm/hcomm.hpp>

#include <cstddef>

#include "reference/reduction.hpp"

namespace hcomm::tools::bench {

struct Case {
  int rank = 0, n = 1, root = 0;
  size_t count = 0;  // the count argument of the call (elements per block for blocked ops)
  DataType dtype = DataType::float32;
  ReduceOp redop = ReduceOp::sum;
  bool reduces = false;
  /// fp16/bf16 compression of float inputs: the codec's unit roundoff and subnormal half-spacing
  /// (README "Compression"); 0 otherwise. Inputs then get fractions that the codec must round.
  double lossy_u = 0, lossy_s = 0;
};

/// The README's bound for a lossy codec: every element of a result within
/// n * (u + 2^-24) * sum_r |x_r| + n * s of the exact value (sum_r |x_r| <= n * 5 here).
double lossy_tolerance(const Case& c);

// Input element `index` of rank `r`: small integers, so that every dtype holds them and every
// partial result exactly, whatever order the library combines ranks in (bfloat16 holds integers
// up to 256: sums of values in [-4, 4] stay exact up to 64 ranks). Products stay within +-2.
double pattern(const Case& c, int r, size_t index);

// Element `index` reduced over all ranks (reference::reduction of the pattern): integers wrap in
// the element type, integer avg divides the wrapped sum truncating toward zero, and only a float
// avg may be inexact.
reference::Expectation reduced(const Case& c, size_t index);

// What data movement must deliver: `v`, exactly.
inline reference::Expectation exactly(double v) {
  return {v, 0};
}

// A value the result must overwrite: NaN for floats, never equal to the expected integer else.
double sentinel(const Case& c, double want);

}  // namespace hcomm::tools::bench
