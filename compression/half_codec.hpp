// The lossy codecs: float32 and float64 payloads rounded to 16 bits, fp16 (IEEE binary16) or
// bf16 (bfloat16), two bytes per element on the wire.
//
// Rounding is to nearest, ties to even, subnormals kept (the F16C instructions' results, which
// the portable loops reproduce bit for bit). inf and NaN stay inf and NaN. A finite value never
// becomes infinite: a payload with a finite value that binary16 cannot hold (|x| >= 65520) goes
// as bf16 instead, and one that even bfloat16 cannot hold (|x| near FLT_MAX, or a float64
// beyond float32's range) goes raw — encode_half() says which. float64 elements are rounded to
// float32 first, then to 16 bits (each step to nearest even).
//
// Error of one encode, per element x: |decode(encode(x)) - x| <= u * |x| + s, with u = 2^-11
// and s = 2^-25 (half the smallest binary16 subnormal) for fp16; u = 2^-8 and s = 2^-134 for
// bf16. The README's "Compression" section turns this into a bound per algorithm.
//
// Any thread may call; buffers must not overlap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compression/codec.hpp"

namespace hcomm::compression {

/// Unit roundoff and subnormal half-spacing of a lossy codec (see above).
struct HalfError {
  double relative;
  double absolute;
};
HalfError half_error(Codec codec);

/// Rounds `count` elements of `src` (float32 or float64) to `codec` (fp16 or bf16) into `out`
/// (`count` values). Returns the codec `out` holds: `codec`, bf16 in place of an fp16 that would
/// overflow, or none when the payload must travel raw (`out` then holds nothing of use).
Codec encode_half(Codec codec, const void* src, size_t count, DataType dtype, uint16_t* out);

/// out[i] = in[i] as float32 or float64 (exact).
void decode_half(Codec codec, const uint16_t* in, size_t count, DataType dtype, void* out);

namespace internal {
/// True when this CPU has F16C and AVX2, which the functions above then use.
bool has_f16c();
/// The portable loops, whatever the CPU has: for tests (both must give the same bits).
Codec encode_half_portable(Codec codec, const void* src, size_t count, DataType dtype,
                           uint16_t* out);
void decode_half_portable(Codec codec, const uint16_t* in, size_t count, DataType dtype, void* out);
}  // namespace internal

}  // namespace hcomm::compression
