// One size of one operation (a Case): its geometry, the input every rank gets and the result it
// must get back, computed here independently of the library.
#pragma once

#include <hcomm/hcomm.hpp>

#include <cstddef>

namespace hcomm::tools::bench {

struct Case {
  int rank = 0, n = 1, root = 0;
  size_t count = 0;  // the count argument of the call (elements per block for blocked ops)
  DataType dtype = DataType::float32;
  ReduceOp redop = ReduceOp::sum;
  bool reduces = false;
};

// Input element `index` of rank `r`: small integers, so that every dtype holds them and every
// partial result exactly, whatever order the library combines ranks in (bfloat16 holds integers
// up to 256: sums of values in [-4, 4] stay exact up to 64 ranks). Products stay within +-2.
double pattern(const Case& c, int r, size_t index);

// Element `index` reduced over all ranks, with the library's documented semantics: integers wrap
// in the element type, and integer avg divides the wrapped sum truncating toward zero.
double reduced(const Case& c, size_t index);

// Only a float avg can be inexact (one rounding of the quotient); everything else must be equal.
bool matches(const Case& c, double got, double want);

// A value the result must overwrite: NaN for floats, never equal to the expected integer else.
double sentinel(const Case& c, double want);

}  // namespace hcomm::tools::bench
