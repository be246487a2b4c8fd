// Rounding and encoding by hand, from the definitions of the formats: nothing here calls hcomm's
// own conversions (compression/half_float.hpp) or relies on the compiler's float16 support.
#include "reference/elements.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace hcomm::tools::reference {
namespace {

/// `x` rounded to nearest even in a binary format of `p` significand bits, smallest normal
/// exponent `emin` and largest finite value `max_finite`.
double round_to_format(double x, int p, int emin, double max_finite) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  int e = 0;
  std::frexp(std::fabs(x), &e);  // |x| = f * 2^e, f in [0.5, 1)
  const double ulp = std::ldexp(1.0, std::max(e - 1, emin) - (p - 1));
  const double r = std::nearbyint(std::fabs(x) / ulp) * ulp;
  return std::copysign(r > max_finite ? std::numeric_limits<double>::infinity() : r, x);
}

template <class T>
T read(const void* buf, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(buf) + i * sizeof(T), sizeof(T));
  return v;
}

template <class T>
void write(void* buf, size_t i, T v) {
  std::memcpy(static_cast<unsigned char*>(buf) + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

bool is_float(DataType t) {
  return t == DataType::float16 || t == DataType::bfloat16 || t == DataType::float32 ||
         t == DataType::float64;
}

bool is_integer(DataType t) {
  return t == DataType::int8 || t == DataType::uint8 || t == DataType::int32 ||
         t == DataType::int64;
}

double round_to(DataType t, double x) {
  switch (t) {
    case DataType::float16:
      return round_to_format(x, 11, -14, 65504.0);
    case DataType::bfloat16:
      return round_to_format(x, 8, -126, 0x1.fep127);
    case DataType::float32:
      return round_to_format(x, 24, -126, 0x1.fffffep127);
    default:
      return x;
  }
}

int64_t wrap(DataType t, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  switch (t) {
    case DataType::int8:
      return static_cast<int64_t>(u & 0xff) - ((u & 0x80) != 0 ? 0x100 : 0);
    case DataType::uint8:
      return static_cast<int64_t>(u & 0xff);
    case DataType::int32:
      return static_cast<int64_t>(u & 0xffffffffu) - ((u & 0x80000000u) != 0 ? 0x100000000 : 0);
    default:
      return v;
  }
}

uint16_t half_bits(double x) {
  if (std::isnan(x)) return 0x7e00;
  const double r = round_to(DataType::float16, x);
  const uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  const double a = std::fabs(r);
  if (std::isinf(a)) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14))  // subnormal (or zero): a multiple of 2^-24
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::ldexp(a, 24)));
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e: exponent e - 1, 10 fraction bits below it
  const auto fraction = static_cast<uint16_t>(std::ldexp(a, 10 - (e - 1)) - 1024);
  return static_cast<uint16_t>(sign | ((e - 1 + 15) << 10) | fraction);
}

double half_value(uint16_t bits) {
  const int e = (bits >> 10) & 0x1f, m = bits & 0x3ff;
  const double s = (bits & 0x8000) != 0 ? -1.0 : 1.0;
  if (e == 0) return s * std::ldexp(m, -24);
  if (e == 31) return m != 0 ? std::numeric_limits<double>::quiet_NaN() : s * HUGE_VAL;
  return s * std::ldexp(m + 1024, e - 25);
}

uint16_t bfloat16_bits(double x) {
  if (std::isnan(x)) return 0x7fc0;
  // Rounded to bfloat16, the value is a binary32 whose low 16 bits are zero.
  const auto f = static_cast<float>(round_to(DataType::bfloat16, x));
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return static_cast<uint16_t>(b >> 16);
}

double bfloat16_value(uint16_t bits) {
  const uint32_t b = uint32_t{bits} << 16;
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

double load(DataType t, const void* buf, size_t i) {
  switch (t) {
    case DataType::float16:
      return half_value(read<uint16_t>(buf, i));
    case DataType::bfloat16:
      return bfloat16_value(read<uint16_t>(buf, i));
    case DataType::float32:
      return read<float>(buf, i);
    case DataType::float64:
      return read<double>(buf, i);
    default:
      return static_cast<double>(load_int(t, buf, i));
  }
}

void store(DataType t, void* buf, size_t i, double v) {
  switch (t) {
    case DataType::float16:
      write(buf, i, half_bits(v));
      break;
    case DataType::bfloat16:
      write(buf, i, bfloat16_bits(v));
      break;
    case DataType::float32:
      write(buf, i, static_cast<float>(round_to(t, v)));
      break;
    case DataType::float64:
      write(buf, i, v);
      break;
    default:
      store_int(t, buf, i, static_cast<int64_t>(v));
  }
}

int64_t load_int(DataType t, const void* buf, size_t i) {
  switch (t) {
    case DataType::int8:
      return read<int8_t>(buf, i);
    case DataType::uint8:
      return read<uint8_t>(buf, i);
    case DataType::int32:
      return read<int32_t>(buf, i);
    case DataType::int64:
      return read<int64_t>(buf, i);
    default:
      return 0;
  }
}

void store_int(DataType t, void* buf, size_t i, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  switch (t) {
    case DataType::int8:
    case DataType::uint8:
      write(buf, i, static_cast<uint8_t>(u));
      break;
    case DataType::int32:
      write(buf, i, static_cast<uint32_t>(u));
      break;
    case DataType::int64:
      write(buf, i, u);
      break;
    default:
      break;
  }
}

}  // namespace hcomm::tools::reference
