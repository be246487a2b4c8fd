// Tests for the float <-> float16 / bfloat16 conversions: known bit patterns, exhaustive decoding,
// rounding against the independent reference of hcomm_reference (in double), and agreement with
// F16C.
#include "compression/half_float.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <ios>
#include <limits>

#include <doctest/doctest.h>

#include "core/cpu_features.hpp"
#include "reference/elements.hpp"
#include "tests/unit/facility.hpp"

namespace {

using hcomm::compression::bfloat16_to_float;
using hcomm::compression::float_to_bfloat16;
using hcomm::compression::float_to_half;
using hcomm::compression::half_to_float;

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

bool half_is_nan(uint16_t h) {
  return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}
bool bf16_is_nan(uint16_t b) {
  return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
}

/// x rounded to nearest, ties to even, in float16 / bfloat16: hcomm_reference's rounding.
double round_to_half(double x) {
  return hcomm::tools::reference::round_to(hcomm::DataType::float16, x);
}
double round_to_bf16(double x) {
  return hcomm::tools::reference::round_to(hcomm::DataType::bfloat16, x);
}

/// binary16 decoded independently of half_to_float (hcomm_reference).
double decode_half(uint16_t h) {
  return hcomm::tools::reference::half_value(h);
}

/// Same value, same sign (so -0 != +0), or both NaN.
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

bool cpu_has_f16c() {
  return hcomm::core::cpu_has_avx2_f16c();
}

__attribute__((target("avx,f16c"))) uint16_t f16c_float_to_half(float f) {
  return static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), 0), 0));
}

__attribute__((target("avx,f16c"))) float f16c_half_to_float(uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

/// Float samples that reach every exponent: all patterns at a prime stride, both signs.
template <class F>
void for_sampled_floats(F f) {
  for (uint64_t u = 0; u <= 0xffffffffu; u += 4099) f(from_bits(static_cast<uint32_t>(u)));
}

}  // namespace

TEST_CASE("float_to_half gives the known bit patterns") {
  CHECK(float_to_half(0.0f) == 0x0000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(1.0f) == 0x3c00);
  CHECK(float_to_half(-2.0f) == 0xc000);
  CHECK(float_to_half(0.5f) == 0x3800);
  CHECK(float_to_half(0.1f) == 0x2e66);
  CHECK(float_to_half(1.0f / 3.0f) == 0x3555);
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65519.996f) == 0x7bff);  // just under the midpoint to 2^16
  CHECK(float_to_half(65520.0f) == 0x7c00);    // the midpoint: ties to even = overflow
  CHECK(float_to_half(1e10f) == 0x7c00);
  CHECK(float_to_half(-1e10f) == 0xfc00);
  CHECK(float_to_half(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(float_to_half(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(float_to_half(-std::ldexp(1.0f, -24)) == 0x8001);
  CHECK(float_to_half(std::ldexp(1023.0f, -24)) == 0x03ff);  // largest subnormal
  CHECK(float_to_half(1e-10f) == 0x0000);
  CHECK(float_to_half(-1e-10f) == 0x8000);
}

TEST_CASE("float_to_half rounds ties to even, in normals and subnormals") {
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // 1 + ulp/2 -> 1
  CHECK(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // 1 + 3 ulp/2 -> 1 + 2 ulp
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -23)) == 0x3c01);
  CHECK(float_to_half(2049.0f) == 0x6800);                          // between 2048 and 2050 -> 2048
  CHECK(float_to_half(2051.0f) == 0x6802);                          // between 2050 and 2052 -> 2052
  CHECK(float_to_half(std::ldexp(1.0f, -25)) == 0x0000);            // half the smallest subnormal
  CHECK(float_to_half(std::ldexp(1.0f, -25) * 1.0001f) == 0x0001);  // just above it
  CHECK(float_to_half(std::ldexp(3.0f, -25)) == 0x0002);            // 1.5 subnormal ulps -> 2
  CHECK(float_to_half(std::ldexp(5.0f, -25)) == 0x0002);            // 2.5 -> 2
  CHECK(float_to_half(std::ldexp(2047.0f, -25)) == 0x0400);  // 1023.5 ulps -> smallest normal
  CHECK(float_to_half(std::ldexp(2045.0f, -25)) == 0x03fe);  // 1022.5 -> 1022
}

TEST_CASE("float_to_half keeps NaN a NaN, quiet, with its sign") {
  const uint32_t nans[] = {0x7fc00000u, 0x7f800001u, 0x7fa00000u,
                           0xffc00000u, 0xff800001u, 0x7fffffffu};
  for (uint32_t u : nans) {
    CAPTURE(u);
    const uint16_t h = float_to_half(from_bits(u));
    CHECK(half_is_nan(h));
    CHECK((h & 0x0200) != 0);  // quiet
    CHECK(((h & 0x8000) != 0) == ((u & 0x80000000u) != 0));
  }
  CHECK(float_to_half(from_bits(0x7fc00000u)) == 0x7e00);
}

TEST_CASE("half_to_float decodes every binary16 value exactly") {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (!same(f, decode_half(static_cast<uint16_t>(h)))) {
      FAIL_CHECK("half 0x" << std::hex << h << " decoded as " << f);
    }
    if (half_is_nan(static_cast<uint16_t>(h))) {
      CHECK((to_bits(f) & 0x00400000u) != 0);  // comes back quiet
    }
  }
  CHECK(to_bits(half_to_float(0x3c00)) == 0x3f800000u);
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(half_to_float(0x7bff) == 65504.0f);
}

TEST_CASE("float_to_half round-trips every non-NaN half") {
  int checked = 0, failures = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    if (half_is_nan(static_cast<uint16_t>(h))) continue;
    ++checked;
    if (float_to_half(half_to_float(static_cast<uint16_t>(h))) != h && ++failures <= 10) {
      FAIL_CHECK("half 0x" << std::hex << h << " did not round-trip");
    }
  }
  CHECK(checked == 0x10000 - 2 * 0x3ff);  // all but the NaNs: exponent 31, mantissa not 0
  CHECK(failures == 0);
}

TEST_CASE("float_to_half matches a reference rounding at every midpoint and on samples") {
  int failures = 0;
  auto check = [&](float f) {
    const double want = round_to_half(f);
    const double got = half_to_float(float_to_half(f));
    if (!same(got, want) && ++failures <= 10) {
      FAIL_CHECK("float " << f << " (0x" << std::hex << to_bits(f) << ") -> " << got << ", want "
                          << want);
    }
  };
  // Midpoints between neighbouring halves (exact in float) and the floats on either side.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const double lo = decode_half(static_cast<uint16_t>(h));
    const double hi = h == 0x7bff ? 65536.0 : decode_half(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      check(f);
      check(-f);
    }
  }
  for_sampled_floats(check);
  CHECK(failures == 0);
}

TEST_CASE("the half conversions agree with F16C bit for bit") {
  if (!hcomm_test::require_facility("F16C", cpu_has_f16c(),
                                    "an x86-64 CPU with F16C (Intel Ivy Bridge, AMD Piledriver "
                                    "or later)"))
    return;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t hh = static_cast<uint16_t>(h);
    if (to_bits(half_to_float(hh)) != to_bits(f16c_half_to_float(hh))) {
      FAIL_CHECK("half 0x" << std::hex << h);
    }
  }
  int failures = 0;
  auto check = [&](float f) {
    if (float_to_half(f) != f16c_float_to_half(f) && ++failures <= 10) {
      FAIL_CHECK("float 0x" << std::hex << to_bits(f));
    }
  };
  for_sampled_floats(check);
  for (uint32_t u : {0x7f800001u, 0x7fbfffffu, 0xffc00001u, 0x7fffe000u}) check(from_bits(u));
  CHECK(failures == 0);
}

TEST_CASE("float_to_bfloat16 gives the known bit patterns and rounds ties to even") {
  CHECK(float_to_bfloat16(1.0f) == 0x3f80);
  CHECK(float_to_bfloat16(-2.0f) == 0xc000);
  CHECK(float_to_bfloat16(0.0f) == 0x0000);
  CHECK(float_to_bfloat16(-0.0f) == 0x8000);
  CHECK(float_to_bfloat16(3.14159265f) == 0x4049);
  CHECK(float_to_bfloat16(from_bits(0x3f808000u)) == 0x3f80);  // tie, even below
  CHECK(float_to_bfloat16(from_bits(0x3f818000u)) == 0x3f82);  // tie, odd below -> up
  CHECK(float_to_bfloat16(from_bits(0x3f807fffu)) == 0x3f80);
  CHECK(float_to_bfloat16(from_bits(0x3f808001u)) == 0x3f81);
  CHECK(float_to_bfloat16(from_bits(0x3fffffffu)) == 0x4000);  // carry into the exponent
  CHECK(float_to_bfloat16(from_bits(0x7f7fffffu)) == 0x7f80);  // FLT_MAX overflows
  CHECK(float_to_bfloat16(from_bits(0x7f7f7fffu)) == 0x7f7f);
  CHECK(float_to_bfloat16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(float_to_bfloat16(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(float_to_bfloat16(from_bits(0x00010000u)) == 0x0001);  // subnormals are kept
  CHECK(float_to_bfloat16(from_bits(0x00008000u)) == 0x0000);
  CHECK(float_to_bfloat16(from_bits(0x00018000u)) == 0x0002);
  CHECK(float_to_bfloat16(from_bits(0x007fffffu)) == 0x0080);  // rounds up to the smallest normal
}

TEST_CASE("float_to_bfloat16 keeps NaN a quiet NaN with its sign") {
  CHECK(float_to_bfloat16(from_bits(0x7fc00000u)) == 0x7fc0);
  CHECK(float_to_bfloat16(from_bits(0xffc00000u)) == 0xffc0);
  for (uint32_t u : {0x7f800001u, 0x7f80ffffu, 0x7fffffffu, 0xff800001u, 0x7fbf8000u}) {
    CAPTURE(u);
    const uint16_t b = float_to_bfloat16(from_bits(u));
    CHECK(bf16_is_nan(b));
    CHECK((b & 0x0040) != 0);
    CHECK((b & 0x8000) == ((u >> 16) & 0x8000));
  }
}

TEST_CASE("bfloat16 conversions are exact one way and correctly rounded the other") {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = bfloat16_to_float(static_cast<uint16_t>(b));
    if (to_bits(f) != b << 16) FAIL_CHECK("bf16 0x" << std::hex << b);
    if (!bf16_is_nan(static_cast<uint16_t>(b)) && float_to_bfloat16(f) != b) {
      FAIL_CHECK("bf16 0x" << std::hex << b << " did not round-trip");
    }
  }
  int failures = 0;
  for_sampled_floats([&](float f) {
    const double want = round_to_bf16(f);
    const double got = bfloat16_to_float(float_to_bfloat16(f));
    if (!same(got, want) && ++failures <= 10) {
      FAIL_CHECK("float 0x" << std::hex << to_bits(f) << " -> " << got << ", want " << want);
    }
  });
  CHECK(failures == 0);
}
