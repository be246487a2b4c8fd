// The input pattern and the reference it implies, element by element.
#include "bench/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "bench/elements.hpp"

namespace hcomm::tools::bench {
namespace {

double combine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::prod:
      return a * b;
    case ReduceOp::min:
      return std::min(a, b);
    case ReduceOp::max:
      return std::max(a, b);
    default:
      return a + b;  // sum, avg
  }
}

}  // namespace

double pattern(const Case& c, int r, size_t index) {
  const bool is_unsigned = c.dtype == DataType::uint8;
  if (c.reduces && c.redop == ReduceOp::prod) {
    if (index % static_cast<size_t>(c.n) == static_cast<size_t>(r)) return 2;
    return ((index + static_cast<size_t>(r)) % 3 == 0 && !is_unsigned) ? -1 : 1;
  }
  const double v = static_cast<double>((static_cast<size_t>(r) * 7 + index * 3 + 1) % 9) - 4;
  return is_unsigned ? v + 4 : v;
}

double reduced(const Case& c, size_t index) {
  double acc = pattern(c, 0, index);
  for (int r = 1; r < c.n; ++r) acc = combine(c.redop, acc, pattern(c, r, index));
  if (!is_float(c.dtype)) acc = wrap(c.dtype, acc);
  if (c.redop == ReduceOp::avg)
    acc = is_float(c.dtype) ? acc / c.n : static_cast<double>(static_cast<int64_t>(acc) / c.n);
  return acc;
}

bool matches(const Case& c, double got, double want) {
  if (!is_float(c.dtype)) return got == wrap(c.dtype, want);
  if (got == want) return true;
  if (c.redop != ReduceOp::avg || !c.reduces || std::isnan(got)) return false;
  double eps = 1e-12;
  if (c.dtype == DataType::float16) eps = 2.0 / 1024;
  if (c.dtype == DataType::bfloat16) eps = 2.0 / 128;
  if (c.dtype == DataType::float32) eps = 1e-6;
  return std::fabs(got - want) <= eps * std::max(1.0, std::fabs(want));
}

double sentinel(const Case& c, double want) {
  return is_float(c.dtype) ? std::nan("") : wrap(c.dtype, want + 1);
}

}  // namespace hcomm::tools::bench
