#include "collectives/reduce_kernels.hpp"

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "compression/half_float.hpp"
#include "core/cpu_features.hpp"

// Structure: a Codec says how an element is stored and which type the op computes in; an Op
// combines two values in place (acc = acc op x). Ops are templates over the value type so one
// definition serves the scalar loops and the F16C loops (where the value is an __m256). They take
// references because a by-value __m256 parameter in a function compiled without AVX changes the
// ABI; everything here is inlined into its loop anyway.

namespace hcomm::collectives {
namespace {

using compression::bfloat16_to_float;
using compression::float_to_bfloat16;
using compression::float_to_half;
using compression::half_to_float;

// ---- Codecs -------------------------------------------------------------------------------------

template <class T>
struct Native {
  using storage = T;
  using value = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};

struct Bfloat16 {
  using storage = uint16_t;
  using value = float;
  static float load(uint16_t v) { return bfloat16_to_float(v); }
  static uint16_t store(float v) { return float_to_bfloat16(v); }
};

/// The portable float16 path: one out-of-line conversion per element (no F16C).
struct HalfScalar {
  using storage = uint16_t;
  using value = float;
  static float load(uint16_t v) { return half_to_float(v); }
  static uint16_t store(float v) { return float_to_half(v); }
};

// ---- Ops ----------------------------------------------------------------------------------------

/// Integer sum and product are computed in the unsigned type: wrap-around without UB.
template <class T, bool = std::is_integral_v<T>>
struct Wrap {
  using type = T;
};
template <class T>
struct Wrap<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using wrap_t = typename Wrap<T>::type;

struct Sum {
  template <class T>
  void operator()(T& acc, const T& x) const {
    acc = static_cast<T>(static_cast<wrap_t<T>>(static_cast<wrap_t<T>>(acc) + wrap_t<T>(x)));
  }
};

struct Prod {
  template <class T>
  void operator()(T& acc, const T& x) const {
    acc = static_cast<T>(static_cast<wrap_t<T>>(static_cast<wrap_t<T>>(acc) * wrap_t<T>(x)));
  }
};

/// A NaN in either operand wins: `acc != acc` is the NaN test (GCC vectors included; it needs
/// IEEE semantics, so this file must not be built with -ffast-math).
struct Min {
  template <class T>
  void operator()(T& acc, const T& x) const {
    if constexpr (std::is_integral_v<T>) {
      acc = acc < x ? acc : x;
    } else {
      acc = (acc < x || acc != acc) ? acc : x;
    }
  }
};

struct Max {
  template <class T>
  void operator()(T& acc, const T& x) const {
    if constexpr (std::is_integral_v<T>) {
      acc = acc > x ? acc : x;
    } else {
      acc = (acc > x || acc != acc) ? acc : x;
    }
  }
};

/// The bitwise ops: integer types only (binary_for never instantiates them for another).
struct Band {
  template <class T>
  void operator()(T& acc, const T& x) const {
    acc = static_cast<T>(acc & x);
  }
};

struct Bor {
  template <class T>
  void operator()(T& acc, const T& x) const {
    acc = static_cast<T>(acc | x);
  }
};

struct Bxor {
  template <class T>
  void operator()(T& acc, const T& x) const {
    acc = static_cast<T>(acc ^ x);
  }
};

template <class Op>
inline constexpr bool is_bitwise_op =
    std::is_same_v<Op, Band> || std::is_same_v<Op, Bor> || std::is_same_v<Op, Bxor>;

/// x = x / n in the element's own type (floating types; int64, which no SIMD unit divides).
template <class D>
struct DivideBy {
  D n;
  template <class T>
  void operator()(T& x) const {
    x /= n;
  }
};

/// Integer x / n truncated toward zero, computed as trunc(F(x) / F(n)) so that it vectorises.
/// Exact whenever |x| < 2^p, p being F's precision (24 or 53 bits): a non-integer quotient is at
/// least 1/n away from every integer, while rounding moves it by at most |x| / n * 2^-p. So float
/// serves the 8-bit types and double int32. (float(n) rounds only for n > 2^24, where every 8-bit
/// quotient is 0 both ways.)
template <class F>
struct DivideTruncVia {
  F n;
  template <class T>
  void operator()(T& x) const {
    x = static_cast<T>(static_cast<F>(x) / n);
  }
};

// ---- Loops --------------------------------------------------------------------------------------
//
// Plain loops for the auto-vectoriser. One loop per aliasing case lets every pointer be
// __restrict, so the vectoriser needs no run-time overlap checks and exact aliasing stays well
// defined. Each body is compiled twice (see Loops): for baseline x86-64 (SSE2) and for AVX2.

#define HCOMM_ALWAYS_INLINE inline __attribute__((always_inline))
#define HCOMM_AVX2_TARGET __attribute__((target("avx2,f16c")))

template <class C, class Op>
HCOMM_ALWAYS_INLINE void binary_body(typename C::storage* __restrict out,
                                     const typename C::storage* __restrict a,
                                     const typename C::storage* __restrict b, size_t n, Op op) {
  for (size_t i = 0; i < n; ++i) {
    typename C::value acc = C::load(a[i]);
    op(acc, C::load(b[i]));
    out[i] = C::store(acc);
  }
}

/// io[i] = io[i] op x[i] (kIoFirst) or x[i] op io[i].
template <class C, bool kIoFirst, class Op>
HCOMM_ALWAYS_INLINE void inplace_body(typename C::storage* __restrict io,
                                      const typename C::storage* __restrict x, size_t n, Op op) {
  for (size_t i = 0; i < n; ++i) {
    typename C::value acc = C::load(kIoFirst ? io[i] : x[i]);
    op(acc, C::load(kIoFirst ? x[i] : io[i]));
    io[i] = C::store(acc);
  }
}

/// buf[i] = f(buf[i]).
template <class C, class F>
HCOMM_ALWAYS_INLINE void map_body(typename C::storage* __restrict buf, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) {
    typename C::value v = C::load(buf[i]);
    f(v);
    buf[i] = C::store(v);
  }
}

/// Which instruction set a call's loops are built for; chosen once per process (see cpu_isa).
enum class Isa { baseline, avx2 };

template <Isa kIsa>
struct Loops;

template <>
struct Loops<Isa::baseline> {
  template <class C, class Op>
  static void binary(typename C::storage* out, const typename C::storage* a,
                     const typename C::storage* b, size_t n, Op op) {
    binary_body<C>(out, a, b, n, op);
  }
  template <class C, bool kIoFirst, class Op>
  static void inplace(typename C::storage* io, const typename C::storage* x, size_t n, Op op) {
    inplace_body<C, kIoFirst>(io, x, n, op);
  }
  template <class C, class F>
  static void map(typename C::storage* buf, size_t n, F f) {
    map_body<C>(buf, n, f);
  }
};

template <>
struct Loops<Isa::avx2> {
  template <class C, class Op>
  HCOMM_AVX2_TARGET static void binary(typename C::storage* out, const typename C::storage* a,
                                       const typename C::storage* b, size_t n, Op op) {
    binary_body<C>(out, a, b, n, op);
  }
  template <class C, bool kIoFirst, class Op>
  HCOMM_AVX2_TARGET static void inplace(typename C::storage* io, const typename C::storage* x,
                                        size_t n, Op op) {
    inplace_body<C, kIoFirst>(io, x, n, op);
  }
  template <class C, class F>
  HCOMM_AVX2_TARGET static void map(typename C::storage* buf, size_t n, F f) {
    map_body<C>(buf, n, f);
  }
};

template <Isa kIsa, class C, class Op>
void binary(void* out, const void* a, const void* b, size_t n, Op op) {
  using S = typename C::storage;
  using L = Loops<kIsa>;
  S* o = static_cast<S*>(out);
  const S* x = static_cast<const S*>(a);
  const S* y = static_cast<const S*>(b);
  if (o == x && o == y) {
    L::template map<C>(o, n, [op](typename C::value& v) { op(v, typename C::value(v)); });
  } else if (o == x) {
    L::template inplace<C, true>(o, y, n, op);
  } else if (o == y) {
    L::template inplace<C, false>(o, x, n, op);
  } else {
    L::template binary<C>(o, x, y, n, op);  // x == y is fine: restrict only constrains writes
  }
}

template <Isa kIsa, class C, class F>
void map(void* buf, size_t n, F f) {
  Loops<kIsa>::template map<C>(static_cast<typename C::storage*>(buf), n, f);
}

// ---- float16 with F16C --------------------------------------------------------------------------
//
// Eight elements per step: widen with VCVTPH2PS, combine in float, narrow with VCVTPS2PH rounding
// to nearest even (immediate 0, independent of MXCSR). Each step loads before it stores, so exact
// aliasing is safe. The tail goes through a zero-padded block so it rounds the same way.

template <class Op>
HCOMM_AVX2_TARGET HCOMM_ALWAYS_INLINE void f16c_block(uint16_t* out, const uint16_t* a,
                                                      const uint16_t* b, Op op) {
  __m256 acc = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
  const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
  op(acc, x);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_cvtps_ph(acc, 0));
}

template <class Op>
HCOMM_AVX2_TARGET void f16c_binary(void* out, const void* a, const void* b, size_t n, Op op) {
  uint16_t* o = static_cast<uint16_t*>(out);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    f16c_block(o + i, x + i, y + i, op);
    f16c_block(o + i + 8, x + i + 8, y + i + 8, op);
  }
  for (; i + 8 <= n; i += 8) f16c_block(o + i, x + i, y + i, op);
  if (i < n) {
    uint16_t ta[8] = {}, tb[8] = {}, to[8];
    std::memcpy(ta, x + i, (n - i) * sizeof(uint16_t));
    std::memcpy(tb, y + i, (n - i) * sizeof(uint16_t));
    f16c_block(to, ta, tb, op);
    std::memcpy(o + i, to, (n - i) * sizeof(uint16_t));
  }
}

template <class F>
HCOMM_AVX2_TARGET void f16c_map(void* buf, size_t n, F f) {
  uint16_t* p = static_cast<uint16_t*>(buf);
  auto unary = [f](__m256& acc, const __m256&) { f(acc); };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) f16c_block(p + i, p + i, p + i, unary);
  if (i < n) {
    uint16_t t[8] = {};
    std::memcpy(t, p + i, (n - i) * sizeof(uint16_t));
    f16c_block(t, t, t, unary);
    std::memcpy(p + i, t, (n - i) * sizeof(uint16_t));
  }
}

#undef HCOMM_AVX2_TARGET
#undef HCOMM_ALWAYS_INLINE

/// AVX2 and F16C together (every x86 CPU with AVX2 has F16C; the check is for virtual machines).
Isa cpu_isa() {
  return core::cpu_has_avx2_f16c() ? Isa::avx2 : Isa::baseline;
}

// ---- Dispatch: once per call --------------------------------------------------------------------

template <Isa kIsa, class Op>
void binary_for(DataType t, void* out, const void* a, const void* b, size_t n, Op op) {
  // The bitwise ops exist for integers only: a floating type is left alone (the caller checked
  // reduces()), and never instantiates them.
  constexpr bool kIntegerOnly = is_bitwise_op<Op>;
  switch (t) {
    case DataType::int8:
      return binary<kIsa, Native<int8_t>>(out, a, b, n, op);
    case DataType::uint8:
      return binary<kIsa, Native<uint8_t>>(out, a, b, n, op);
    case DataType::int32:
      return binary<kIsa, Native<int32_t>>(out, a, b, n, op);
    case DataType::int64:
      return binary<kIsa, Native<int64_t>>(out, a, b, n, op);
    case DataType::float32:
      if constexpr (!kIntegerOnly) return binary<kIsa, Native<float>>(out, a, b, n, op);
      return;
    case DataType::float64:
      if constexpr (!kIntegerOnly) return binary<kIsa, Native<double>>(out, a, b, n, op);
      return;
    case DataType::bfloat16:
      if constexpr (!kIntegerOnly) return binary<kIsa, Bfloat16>(out, a, b, n, op);
      return;
    case DataType::float16:
      if constexpr (kIntegerOnly) {
        return;
      } else if constexpr (kIsa == Isa::avx2) {
        return f16c_binary(out, a, b, n, op);
      } else {
        return binary<kIsa, HalfScalar>(out, a, b, n, op);
      }
  }
}

template <Isa kIsa>
void reduce_for(void* out, const void* a, const void* b, size_t n, DataType t, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return binary_for<kIsa>(t, out, a, b, n, Sum{});
    case ReduceOp::prod:
      return binary_for<kIsa>(t, out, a, b, n, Prod{});
    case ReduceOp::min:
      return binary_for<kIsa>(t, out, a, b, n, Min{});
    case ReduceOp::max:
      return binary_for<kIsa>(t, out, a, b, n, Max{});
    case ReduceOp::band:
      return binary_for<kIsa>(t, out, a, b, n, Band{});
    case ReduceOp::bor:
      return binary_for<kIsa>(t, out, a, b, n, Bor{});
    case ReduceOp::bxor:
      return binary_for<kIsa>(t, out, a, b, n, Bxor{});
  }
}

template <Isa kIsa>
void finalize_for(void* buf, size_t n, DataType t, int nranks) {
  const DivideBy<float> by_float{static_cast<float>(nranks)};
  const DivideTruncVia<float> trunc_float{static_cast<float>(nranks)};
  switch (t) {
    case DataType::int8:
      return map<kIsa, Native<int8_t>>(buf, n, trunc_float);
    case DataType::uint8:
      return map<kIsa, Native<uint8_t>>(buf, n, trunc_float);
    case DataType::int32:
      return map<kIsa, Native<int32_t>>(buf, n,
                                        DivideTruncVia<double>{static_cast<double>(nranks)});
    case DataType::int64:
      return map<kIsa, Native<int64_t>>(buf, n, DivideBy<int64_t>{nranks});
    case DataType::float32:
      return map<kIsa, Native<float>>(buf, n, by_float);
    case DataType::float64:
      return map<kIsa, Native<double>>(buf, n, DivideBy<double>{static_cast<double>(nranks)});
    case DataType::bfloat16:
      return map<kIsa, Bfloat16>(buf, n, by_float);
    case DataType::float16:
      if constexpr (kIsa == Isa::avx2) {
        return f16c_map(buf, n, by_float);
      } else {
        return map<kIsa, HalfScalar>(buf, n, by_float);
      }
  }
}

void reduce_impl(void* out, const void* a, const void* b, size_t n, DataType t, ReduceOp op,
                 Isa isa) {
  if (n == 0) return;
  if (isa == Isa::avx2) return reduce_for<Isa::avx2>(out, a, b, n, t, op);
  return reduce_for<Isa::baseline>(out, a, b, n, t, op);
}

void finalize_impl(void* buf, size_t n, DataType t, int nranks, Isa isa) {
  if (n == 0 || nranks <= 1) return;
  if (isa == Isa::avx2) return finalize_for<Isa::avx2>(buf, n, t, nranks);
  return finalize_for<Isa::baseline>(buf, n, t, nranks);
}

}  // namespace

void reduce_into(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) {
  reduce_impl(dst, dst, src, count, dtype, op, cpu_isa());
}

void reduce(void* out, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op) {
  reduce_impl(out, a, b, count, dtype, op, cpu_isa());
}

void finalize_average(void* buf, size_t count, DataType dtype, int nranks) {
  finalize_impl(buf, count, dtype, nranks, cpu_isa());
}

namespace internal {

bool has_avx2_f16c() {
  return cpu_isa() == Isa::avx2;
}

void reduce_portable(void* out, const void* a, const void* b, size_t count, DataType dtype,
                     ReduceOp op) {
  reduce_impl(out, a, b, count, dtype, op, Isa::baseline);
}

void finalize_average_portable(void* buf, size_t count, DataType dtype, int nranks) {
  finalize_impl(buf, count, dtype, nranks, Isa::baseline);
}

}  // namespace internal
}  // namespace hcomm::collectives
