// Conversions between float and the two 16-bit floating formats hcomm reduces: IEEE 754 binary16
// ("half", DataType::float16) and bfloat16 (the upper 16 bits of a binary32).
//
// All conversions to 16 bits round to nearest, ties to even, and never flush subnormals. A NaN
// stays a NaN and comes out quiet: its sign and the leading payload bits that fit are kept. These
// are the results the F16C instructions (VCVTPS2PH with round-to-nearest, VCVTPH2PS) give, so the
// scalar and the vector reduction kernels agree bit for bit.
#pragma once

#include <cstdint>
#include <cstring>

namespace hcomm::compression {

/// float -> binary16 bits. Magnitudes from 65520 up become infinity.
uint16_t float_to_half(float f);
/// binary16 bits -> float (exact; a signalling NaN comes back quiet).
float half_to_float(uint16_t h);

/// float -> bfloat16 bits. Branch-free (a select), so loops over it vectorise.
inline uint16_t float_to_bfloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  // Adding 0x7fff plus the lowest kept bit rounds the dropped half to nearest, ties to even; a
  // NaN instead gets its quiet bit set so that no payload truncation can turn it into infinity.
  const uint32_t r = f != f ? u | 0x400000u : u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(r >> 16);
}

/// bfloat16 bits -> float (exact; NaNs keep their bits).
inline float bfloat16_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace hcomm::compression
