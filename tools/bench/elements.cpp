// Element conversions; float16 and bfloat16 by hand, since C++17 has neither type.
#include "bench/elements.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace hcomm::tools::bench {
namespace {

// binary16 for the small integers and NaN that this tool stores (exact for |v| < 2048).
uint16_t half_from_small_int(double v) {
  if (std::isnan(v)) return 0x7e00;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  auto m = static_cast<uint32_t>(std::fabs(v));
  if (m == 0) return sign;
  int e = 0;
  while ((m >> (e + 1)) != 0) ++e;  // e = floor(log2(m))
  return static_cast<uint16_t>(sign | ((e + 15) << 10) | ((m << (10 - e)) & 0x3ff));
}

double half_to_double(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0) return s * std::ldexp(m, -24);
  if (e == 31) return m != 0 ? std::nan("") : s * HUGE_VAL;
  return s * std::ldexp(m + 1024, e - 25);
}

}  // namespace

bool is_float(DataType t) {
  return t == DataType::float16 || t == DataType::bfloat16 || t == DataType::float32 ||
         t == DataType::float64;
}

double wrap(DataType t, double v) {
  const auto x = static_cast<int64_t>(v);
  switch (t) {
    case DataType::int8:
      return static_cast<int8_t>(x);
    case DataType::uint8:
      return static_cast<uint8_t>(x);
    case DataType::int32:
      return static_cast<int32_t>(x);
    default:
      return static_cast<double>(x);
  }
}

void store(DataType t, void* buf, size_t i, double v) {
  switch (t) {
    case DataType::int8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(wrap(t, v));
      break;
    case DataType::uint8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(wrap(t, v));
      break;
    case DataType::int32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case DataType::int64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
    case DataType::float16:
      static_cast<uint16_t*>(buf)[i] = half_from_small_int(v);
      break;
    case DataType::bfloat16: {  // the upper half of a binary32: exact for small integers
      const float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      static_cast<uint16_t*>(buf)[i] = static_cast<uint16_t>(bits >> 16);
      break;
    }
    case DataType::float32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case DataType::float64:
      static_cast<double*>(buf)[i] = v;
      break;
  }
}

double load(DataType t, const void* buf, size_t i) {
  switch (t) {
    case DataType::int8:
      return static_cast<const int8_t*>(buf)[i];
    case DataType::uint8:
      return static_cast<const uint8_t*>(buf)[i];
    case DataType::int32:
      return static_cast<const int32_t*>(buf)[i];
    case DataType::int64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case DataType::float16:
      return half_to_double(static_cast<const uint16_t*>(buf)[i]);
    case DataType::bfloat16: {
      const uint32_t bits = uint32_t{static_cast<const uint16_t*>(buf)[i]} << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case DataType::float32:
      return static_cast<const float*>(buf)[i];
    case DataType::float64:
      return static_cast<const double*>(buf)[i];
  }
  return std::nan("");
}

}  // namespace hcomm::tools::bench
