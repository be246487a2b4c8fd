#include "compression/half_float.hpp"

namespace hcomm::compression {

uint16_t float_to_half(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  // 65520 = 0x477ff000 is halfway between 65504 (the largest half) and 2^16; ties go to even,
  // which is 2^16, so everything from there up (infinity included) becomes infinity.
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) {
    // Normal half (|f| >= 2^-14): rebias the exponent (127 - 15 = 112) and round the 13 dropped
    // mantissa bits; a carry out of the mantissa correctly bumps the exponent.
    const uint32_t r = a - 0x38000000u + 0xfffu + ((a >> 13) & 1u);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  // Below 2^-25 (half the smallest subnormal, which itself rounds to even = 0) the result is zero.
  if (a < 0x33000000u) return static_cast<uint16_t>(sign);
  // Subnormal half. With e in [102, 112] the biased exponent and m the 24-bit significand,
  // |f| = m * 2^(e - 150), which in units of the smallest subnormal (2^-24) is m >> (126 - e).
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - (a >> 23);  // 14..24
  const uint32_t rest = m & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  uint32_t r = m >> shift;
  if (rest > halfway || (rest == halfway && (r & 1u) != 0)) ++r;  // may carry into 0x400: normal
  return static_cast<uint16_t>(sign | r);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  uint32_t u;
  if (e == 0x1f) {
    u = sign | 0x7f800000u | (m << 13) | (m != 0 ? 0x400000u : 0u);
  } else if (e != 0) {
    u = sign | ((e + 112u) << 23) | (m << 13);
  } else if (m == 0) {
    u = sign;
  } else {
    // Subnormal: m * 2^-24. Normalise so the leading one lands in bit 10.
    int shifts = 0;
    uint32_t mm = m;
    while ((mm & 0x400u) == 0) {
      mm <<= 1;
      ++shifts;
    }
    u = sign | ((113u - static_cast<uint32_t>(shifts)) << 23) | ((mm & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace hcomm::compression
