#include "reference/reduction.hpp"

#include <algorithm>
#include <limits>

namespace hcomm::tools::reference {

int64_t combine_int(DataType t, ReduceOp op, int64_t a, int64_t b) {
  const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return wrap(t, static_cast<int64_t>(ua + ub));
    case ReduceOp::prod:
      return wrap(t, static_cast<int64_t>(ua * ub));
    case ReduceOp::min:
      return std::min(a, b);
    case ReduceOp::max:
      return std::max(a, b);
    case ReduceOp::band:  // a and b are sign- (uint8: zero-) extended: so is the result
      return a & b;
    case ReduceOp::bor:
      return a | b;
    case ReduceOp::bxor:
      return a ^ b;
  }
  return 0;
}

double combine_real(ReduceOp op, double a, double b) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return a + b;
    case ReduceOp::prod:
      return a * b;
    case ReduceOp::min:
      return std::isnan(a) || std::isnan(b) ? nan : (a < b ? a : b);
    case ReduceOp::max:
      return std::isnan(a) || std::isnan(b) ? nan : (a > b ? a : b);
    case ReduceOp::band:  // integer types only
    case ReduceOp::bor:
    case ReduceOp::bxor:
      return nan;
  }
  return nan;
}

double unit_roundoff(DataType t) {
  switch (t) {
    case DataType::float16:
      return std::ldexp(1.0, -11);
    case DataType::bfloat16:
      return std::ldexp(1.0, -8);
    case DataType::float32:
      return std::ldexp(1.0, -24);
    case DataType::float64:
      return std::ldexp(1.0, -53);
    default:
      return 0;
  }
}

double tolerance(DataType t, ReduceOp op, int n, double abs_sum, double want) {
  if (op != ReduceOp::avg || !is_float(t)) return 0;
  const double u = unit_roundoff(t), ranks = n;
  const double any_order = ranks * u * (abs_sum / ranks) * (1 + ranks * u);
  double relative = 1e-12;
  if (t == DataType::float16) relative = std::ldexp(1.0, -9);
  if (t == DataType::bfloat16) relative = std::ldexp(1.0, -6);
  if (t == DataType::float32) relative = 1e-6;
  return std::min(any_order, relative * std::max(1.0, std::fabs(want)));
}

}  // namespace hcomm::tools::reference
