// Independent reference for the integration tests: every rank's input is a pure function of
// (rank, element), small integers that every data type holds exactly, so each rank can compute
// the expected result of any collective in double precision and compare. Encoding to float16 /
// bfloat16 here is deliberately separate from the library's converters.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <hcomm/hcomm.hpp>

namespace hcomm_test {

using hcomm::DataType;
using hcomm::ReduceOp;

/// Input of `rank` at element i for a reduction with `op`: small integers (products stay tiny).
inline int input_value(int rank, size_t i, ReduceOp op, DataType t) {
  bool unsigned_type = t == DataType::uint8;
  if (op == ReduceOp::prod) {
    int v = static_cast<int>((rank * 5 + i * 3) % 3);  // 0,1,2 → 1, 2, -1 (or 1 when unsigned)
    return v == 0 ? 1 : v == 1 ? 2 : (unsigned_type ? 1 : -1);
  }
  int v = static_cast<int>((static_cast<size_t>(rank) * 7 + i * 3) % 11);
  return unsigned_type ? v : v - 5;
}

/// Exact binary16 bits of a small integer (|v| < 2048).
inline uint16_t half_bits_of_int(int v) {
  if (v == 0) return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  unsigned a = static_cast<unsigned>(v < 0 ? -v : v);
  int e = 0;
  while ((a >> (e + 1)) != 0) ++e;
  unsigned mant = (a << (10 - e)) & 0x3ff;
  return static_cast<uint16_t>(sign | ((e + 15) << 10) | mant);
}

inline double half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? INFINITY : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

inline double bf16_to_double(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t bf16_bits_of_int(int v) {
  float f = static_cast<float>(v);  // small integers are exact in 8 bits of mantissa
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);
}

/// Writes integer `v` as element i of a buffer of type t.
inline void store(void* buf, size_t i, DataType t, int v) {
  auto* p = static_cast<unsigned char*>(buf);
  switch (t) {
    case DataType::int8: {
      int8_t x = static_cast<int8_t>(v);
      std::memcpy(p + i, &x, 1);
      break;
    }
    case DataType::uint8: {
      uint8_t x = static_cast<uint8_t>(v);
      std::memcpy(p + i, &x, 1);
      break;
    }
    case DataType::int32: {
      int32_t x = v;
      std::memcpy(p + 4 * i, &x, 4);
      break;
    }
    case DataType::int64: {
      int64_t x = v;
      std::memcpy(p + 8 * i, &x, 8);
      break;
    }
    case DataType::float16: {
      uint16_t x = half_bits_of_int(v);
      std::memcpy(p + 2 * i, &x, 2);
      break;
    }
    case DataType::bfloat16: {
      uint16_t x = bf16_bits_of_int(v);
      std::memcpy(p + 2 * i, &x, 2);
      break;
    }
    case DataType::float32: {
      float x = static_cast<float>(v);
      std::memcpy(p + 4 * i, &x, 4);
      break;
    }
    case DataType::float64: {
      double x = v;
      std::memcpy(p + 8 * i, &x, 8);
      break;
    }
  }
}

/// Reads element i as a double.
inline double load(const void* buf, size_t i, DataType t) {
  auto* p = static_cast<const unsigned char*>(buf);
  switch (t) {
    case DataType::int8: {
      int8_t x;
      std::memcpy(&x, p + i, 1);
      return x;
    }
    case DataType::uint8: {
      uint8_t x;
      std::memcpy(&x, p + i, 1);
      return x;
    }
    case DataType::int32: {
      int32_t x;
      std::memcpy(&x, p + 4 * i, 4);
      return x;
    }
    case DataType::int64: {
      int64_t x;
      std::memcpy(&x, p + 8 * i, 8);
      return static_cast<double>(x);
    }
    case DataType::float16: {
      uint16_t x;
      std::memcpy(&x, p + 2 * i, 2);
      return half_to_double(x);
    }
    case DataType::bfloat16: {
      uint16_t x;
      std::memcpy(&x, p + 2 * i, 2);
      return bf16_to_double(x);
    }
    case DataType::float32: {
      float x;
      std::memcpy(&x, p + 4 * i, 4);
      return x;
    }
    case DataType::float64: {
      double x;
      std::memcpy(&x, p + 8 * i, 8);
      return x;
    }
  }
  return NAN;
}

inline bool is_integer(DataType t) {
  return t == DataType::int8 || t == DataType::uint8 || t == DataType::int32 ||
         t == DataType::int64;
}

/// The expected reduction over `size` ranks at element i, in double.
inline double expected_reduction(int size, size_t i, ReduceOp op, DataType t) {
  double acc = input_value(0, i, op, t);
  for (int r = 1; r < size; ++r) {
    double v = input_value(r, i, op, t);
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        acc += v;
        break;
      case ReduceOp::prod:
        acc *= v;
        break;
      case ReduceOp::min:
        acc = std::min(acc, v);
        break;
      case ReduceOp::max:
        acc = std::max(acc, v);
        break;
    }
  }
  if (op == ReduceOp::avg) acc = is_integer(t) ? std::trunc(acc / size) : acc / size;
  return acc;
}

/// Unit roundoff u of a floating type (half an ulp of 1: 2^-p for p significand bits); 0 for the
/// integer types, whose reductions are exact (with wrap-around, never reached by these inputs).
inline double unit_roundoff(DataType t) {
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

/// Bound on |result - expected| for a reduction with `op` over `size` ranks at element i, derived
/// from the operations a reduction order may perform rather than from a blanket epsilon:
/// - sum, prod, min, max: every input is a small integer and every partial result (in any
///   order, any tree) is an integer of magnitude <= sum over ranks of |x_r| (prod: <= 2^size),
///   exactly representable in every type: exact, tolerance 0.
/// - avg, integer types: two's-complement sum then truncating division: exact.
/// - avg, floating types: either the exact sum divided once (one rounding: u * |S| / n), or each
///   input divided first (n roundings of x_r / n) then summed in any order (n - 1 roundings of a
///   partial sum bounded by A = sum |x_r| / n). Both are within n * u * A * (1 + n * u), which
///   is the bound used; a result with more error than that is wrong, not unlucky.
inline double tolerance(int size, size_t i, ReduceOp op, DataType t) {
  if (op != ReduceOp::avg || is_integer(t)) return 0;
  double abs_sum = 0;
  for (int r = 0; r < size; ++r) abs_sum += std::fabs(input_value(r, i, op, t));
  const double u = unit_roundoff(t), n = size;
  return n * u * (abs_sum / n) * (1 + n * u);
}

/// Payload of the data-movement collectives (broadcast, allgather(v), alltoall(v), gather,
/// scatter, send/recv): what rank `src` sends to rank `dst` at element i. Integers in [-50, 50]
/// ([0, 100] for uint8), exact in every type; the period in i (101) and the dependence on both
/// ranks make a misplaced, shifted or mis-routed block visible.
inline int payload_value(int src, int dst, size_t i, DataType t) {
  int v = static_cast<int>((static_cast<size_t>(src) * 37 + static_cast<size_t>(dst) * 11 + i * 5) %
                           101);
  return t == DataType::uint8 ? v : v - 50;
}

}  // namespace hcomm_test
