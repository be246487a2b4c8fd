#include "compression/half_codec.hpp"

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "compression/half_float.hpp"
#include "core/cpu_features.hpp"

namespace hcomm::compression {
namespace {

constexpr float kHalfLimit = 65520.0f;  // the smallest magnitude binary16 rounds to infinity
constexpr size_t kBlock = 1024;         // float64 payloads pass through float32 in blocks

bool finite(float f) {
  return std::isfinite(f);
}

// ---- float32 -> 16 bits, portable
// ----------------------------------------------------------------

/// False when a finite element would overflow the format.
bool encode_fp16_portable(const float* src, size_t n, uint16_t* out) {
  bool ok = true;
  for (size_t i = 0; i < n; ++i) {
    out[i] = float_to_half(src[i]);
    ok &= !(std::fabs(src[i]) >= kHalfLimit && finite(src[i]));
  }
  return ok;
}

bool encode_bf16(const float* src, size_t n, uint16_t* out) {
  uint32_t overflow = 0;
  for (size_t i = 0; i < n; ++i) {
    out[i] = float_to_bfloat16(src[i]);
    // Infinite out of a finite in: exponent all ones, mantissa zero, input exponent not.
    uint32_t u;
    std::memcpy(&u, &src[i], sizeof u);
    overflow |= static_cast<uint32_t>((out[i] & 0x7fffu) == 0x7f80u) &
                static_cast<uint32_t>((u & 0x7f800000u) != 0x7f800000u);
  }
  return overflow == 0;
}

void decode_fp16_portable(const uint16_t* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = half_to_float(in[i]);
}

void decode_bf16(const uint16_t* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = bfloat16_to_float(in[i]);
}

// ---- float32 <-> binary16 with F16C
// ---------------------------------------------------------------

#define HCOMM_F16C_TARGET __attribute__((target("avx2,f16c")))

HCOMM_F16C_TARGET bool encode_fp16_f16c(const float* src, size_t n, uint16_t* out) {
  const __m256 limit = _mm256_set1_ps(kHalfLimit);
  const __m256 inf = _mm256_set1_ps(INFINITY);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 bad = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(src + i);
    const __m256 a = _mm256_and_ps(x, abs_mask);
    bad = _mm256_or_ps(
        bad, _mm256_and_ps(_mm256_cmp_ps(a, limit, _CMP_GE_OQ), _mm256_cmp_ps(a, inf, _CMP_LT_OQ)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  bool ok = _mm256_movemask_ps(bad) == 0;
  if (i < n) ok &= encode_fp16_portable(src + i, n - i, out + i);
  return ok;
}

HCOMM_F16C_TARGET void decode_fp16_f16c(const uint16_t* in, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  if (i < n) decode_fp16_portable(in + i, n - i, out + i);
}

/// float32 -> bfloat16 eight at a time: the same integer rounding as float_to_bfloat16().
HCOMM_F16C_TARGET bool encode_bf16_avx2(const float* src, size_t n, uint16_t* out) {
  const __m256i round_bias = _mm256_set1_epi32(0x7fff);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i quiet = _mm256_set1_epi32(0x400000);
  const __m256i exp_mask = _mm256_set1_epi32(0x7f800000);
  __m256i bad = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(src + i);
    const __m256i u = _mm256_castps_si256(x);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(round_bias, lsb));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(u, quiet), nan);
    // A finite input whose rounding reached the all-ones exponent overflowed.
    const __m256i finite_in = _mm256_xor_si256(
        _mm256_cmpeq_epi32(_mm256_and_si256(u, exp_mask), exp_mask), _mm256_set1_epi32(-1));
    const __m256i inf_out = _mm256_cmpeq_epi32(_mm256_and_si256(r, exp_mask), exp_mask);
    bad = _mm256_or_si256(bad, _mm256_and_si256(finite_in, inf_out));
    const __m256i hi = _mm256_srli_epi32(r, 16);
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(hi, hi), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_castsi256_si128(packed));
  }
  bool ok = _mm256_testz_si256(bad, bad) != 0;
  if (i < n) ok &= encode_bf16(src + i, n - i, out + i);
  return ok;
}

HCOMM_F16C_TARGET void decode_bf16_avx2(const uint16_t* in, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
  }
  if (i < n) decode_bf16(in + i, n - i, out + i);
}

// ---- dispatch
// ------------------------------------------------------------------------------------

bool encode_floats(Codec codec, const float* src, size_t n, uint16_t* out, bool fast) {
  if (codec == Codec::bf16) return fast ? encode_bf16_avx2(src, n, out) : encode_bf16(src, n, out);
  return fast ? encode_fp16_f16c(src, n, out) : encode_fp16_portable(src, n, out);
}

void decode_floats(Codec codec, const uint16_t* in, size_t n, float* out, bool fast) {
  if (codec == Codec::bf16) return fast ? decode_bf16_avx2(in, n, out) : decode_bf16(in, n, out);
  if (fast) return decode_fp16_f16c(in, n, out);
  decode_fp16_portable(in, n, out);
}

/// One try of `codec` over the whole payload; false on an overflow.
bool encode_as(Codec codec, const void* src, size_t count, DataType dtype, uint16_t* out,
               bool fast) {
  if (dtype == DataType::float32)
    return encode_floats(codec, static_cast<const float*>(src), count, out, fast);
  const double* d = static_cast<const double*>(src);
  float block[kBlock];
  bool ok = true;
  for (size_t i = 0; i < count; i += kBlock) {
    const size_t n = count - i < kBlock ? count - i : kBlock;
    for (size_t j = 0; j < n; ++j) {
      block[j] = static_cast<float>(d[i + j]);
      ok &= finite(block[j]) || !std::isfinite(d[i + j]);
    }
    ok &= encode_floats(codec, block, n, out + i, fast);
  }
  return ok;
}

Codec encode_with(Codec codec, const void* src, size_t count, DataType dtype, uint16_t* out,
                  bool fast) {
  if (!is_lossy(codec) || !applies_to(codec, dtype)) return Codec::none;
  if (encode_as(codec, src, count, dtype, out, fast)) return codec;
  if (codec == Codec::fp16 && encode_as(Codec::bf16, src, count, dtype, out, fast))
    return Codec::bf16;
  return Codec::none;
}

void decode_with(Codec codec, const uint16_t* in, size_t count, DataType dtype, void* out,
                 bool fast) {
  if (dtype == DataType::float32)
    return decode_floats(codec, in, count, static_cast<float*>(out), fast);
  double* d = static_cast<double*>(out);
  float block[kBlock];
  for (size_t i = 0; i < count; i += kBlock) {
    const size_t n = count - i < kBlock ? count - i : kBlock;
    decode_floats(codec, in + i, n, block, fast);
    for (size_t j = 0; j < n; ++j) d[i + j] = block[j];
  }
}

}  // namespace

HalfError half_error(Codec codec) {
  if (codec == Codec::bf16) return {std::ldexp(1.0, -8), std::ldexp(1.0, -134)};
  return {std::ldexp(1.0, -11), std::ldexp(1.0, -25)};
}

Codec encode_half(Codec codec, const void* src, size_t count, DataType dtype, uint16_t* out) {
  return encode_with(codec, src, count, dtype, out, internal::has_f16c());
}

void decode_half(Codec codec, const uint16_t* in, size_t count, DataType dtype, void* out) {
  decode_with(codec, in, count, dtype, out, internal::has_f16c());
}

namespace internal {

bool has_f16c() {
  return core::cpu_has_avx2_f16c();
}

Codec encode_half_portable(Codec codec, const void* src, size_t count, DataType dtype,
                           uint16_t* out) {
  return encode_with(codec, src, count, dtype, out, false);
}

void decode_half_portable(Codec codec, const uint16_t* in, size_t count, DataType dtype,
                          void* out) {
  decode_with(codec, in, count, dtype, out, false);
}

}  // namespace internal
}  // namespace hcomm::compression
