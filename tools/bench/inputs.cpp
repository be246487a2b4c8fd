// The input pattern and the reference result it implies, element by element.
#include "bench/inputs.hpp"

#include <cmath>
#include <cstdint>

namespace hcomm::tools::bench {

double pattern(const Case& c, int r, size_t index) {
  const bool is_unsigned = c.dtype == DataType::uint8;
  if (c.reduces && c.redop == ReduceOp::prod) {
    if (index % static_cast<size_t>(c.n) == static_cast<size_t>(r)) return 2;
    return ((index + static_cast<size_t>(r)) % 3 == 0 && !is_unsigned) ? -1 : 1;
  }
  const double v = static_cast<double>((static_cast<size_t>(r) * 7 + index * 3 + 1) % 9) - 4;
  if (c.lossy_u > 0)  // a fraction in (0, 1) that 16 bits do not hold
    return v + static_cast<double>((static_cast<size_t>(r) * 5 + index * 11) % 97 + 1) / 98.0;
  return is_unsigned ? v + 4 : v;
}

reference::Expectation reduced(const Case& c, size_t index) {
  return reference::reduction(c.dtype, c.redop, c.n, [&](int r) { return pattern(c, r, index); });
}

double lossy_tolerance(const Case& c) {
  const double n = c.n;
  return n * (c.lossy_u + std::ldexp(1.0, -24)) * n * 5.0 + n * c.lossy_s;
}

double sentinel(const Case& c, double want) {
  if (reference::is_float(c.dtype)) return std::nan("");
  return static_cast<double>(reference::wrap(c.dtype, static_cast<int64_t>(want) + 1));
}

}  // namespace hcomm::tools::bench
