// What a reduction must produce, computed independently of hcomm's kernels: one step of each
// ReduceOp (in int64 with the element type's wrap-around for integers, in double for floats,
// NaN propagating), the result over every rank's input, and how far from it a right result may
// lie. hcomm's semantics (hcomm/types.hpp): integer avg divides the wrapped sum truncating
// toward zero; float avg divides the reduced value once.
#pragma once

#include <hcomm/types.hpp>

#include <cmath>
#include <cstdint>

#include "reference/elements.hpp"

namespace hcomm::tools::reference {

/// One step of `op` on two values of integer type `t` (sum and avg: a + b, prod: a * b, min,
/// max), wrapped to `t`.
int64_t combine_int(DataType t, ReduceOp op, int64_t a, int64_t b);

/// One step of `op` on two reals, not rounded to any element type (round_to does that): sum and
/// avg a + b, prod a * b; min and max are NaN when either operand is, and `b` when a == b (so
/// min(-0, +0) is +0, as the kernels have it).
double combine_real(ReduceOp op, double a, double b);

/// Unit roundoff of a floating type (2^-p for p significand bits); 0 for the integer types.
double unit_roundoff(DataType t);

/// How far from the exact result `want` of `op` over `n` ranks a right result of type `t` may
/// lie, for inputs that are small integers (their sums and products exact in every type, in any
/// order) whose magnitudes add up to `abs_sum`. 0 but for a float avg, where it is the smaller
/// of two bounds, so that neither check that used one of them loosens:
/// - any order of sums and divisions: dividing the exact sum once (one rounding, u * |S| / n),
///   or each input first (n roundings of x_r / n) and then summing (n - 1 roundings of partial
///   sums bounded by A = abs_sum / n) stay within n * u * A * (1 + n * u);
/// - one division, correctly rounded (as hcomm does), with room: 2^-9 (float16), 2^-6
///   (bfloat16), 1e-6 (float32), 1e-12 (float64) times max(1, |want|).
double tolerance(DataType t, ReduceOp op, int n, double abs_sum, double want);

/// The result one element must have, and how far from it it may lie.
struct Expectation {
  double value = 0;
  double tolerance = 0;
};

/// Within the tolerance of the value; NaN never is.
inline bool matches(const Expectation& e, double got) {
  return std::fabs(got - e.value) <= e.tolerance;
}

/// `op` over `n` ranks (n >= 1) at one element, rank r's input being `input(r)` (a double
/// holding a value of type `t`; integers below 2^53). Integers: combined in int64 and wrapped
/// to `t`, avg then divided truncating toward zero, tolerance 0. Floats: combined in double,
/// avg divided by n once, not rounded to `t` (round_to does that where a caller needs it), with
/// tolerance() above.
template <class Input>
Expectation reduction(DataType t, ReduceOp op, int n, const Input& input) {
  if (reference::is_integer(t)) {
    int64_t acc = wrap(t, static_cast<int64_t>(input(0)));
    for (int r = 1; r < n; ++r) acc = combine_int(t, op, acc, static_cast<int64_t>(input(r)));
    if (op == ReduceOp::avg) acc /= n;
    return {static_cast<double>(acc), 0};
  }
  double acc = input(0);
  double abs_sum = std::fabs(acc);
  for (int r = 1; r < n; ++r) {
    const double v = input(r);
    acc = combine_real(op, acc, v);
    abs_sum += std::fabs(v);
  }
  if (op == ReduceOp::avg) acc /= n;
  return {acc, tolerance(t, op, n, abs_sum, acc)};
}

}  // namespace hcomm::tools::reference
