// Elements of every DataType written and read as doubles: how hcomm-bench fills its inputs and
// reads results back to check them, independently of the library's own conversions.
#pragma once

#include <hcomm/hcomm.hpp>

#include <cstddef>

namespace hcomm::tools::bench {

bool is_float(DataType t);

// An integer reduced in the element type wraps around (two's complement), as the library does.
double wrap(DataType t, double v);

// Element i of buf. Exact for the values this tool stores: small integers, and NaN for floats.
void store(DataType t, void* buf, size_t i, double v);
double load(DataType t, const void* buf, size_t i);

}  // namespace hcomm::tools::bench
