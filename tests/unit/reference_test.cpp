// hcomm_reference (tools/reference/): the arithmetic results are checked against must itself be
// right. Rounding and encodings are checked against values worked out by hand and against every
// bit pattern; reductions against their documented semantics.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "reference/elements.hpp"
#include "reference/reduction.hpp"

namespace {

using hcomm::DataType;
using hcomm::ReduceOp;
namespace ref = hcomm::tools::reference;

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("round_to rounds to nearest, ties to even, in float16, bfloat16 and float32") {
  const double ulp1 = std::ldexp(1.0, -10);                                 // float16's ulp at 1
  CHECK(ref::round_to(DataType::float16, 1 + ulp1 / 2) == 1.0);             // tie: to even
  CHECK(ref::round_to(DataType::float16, 1 + 1.5 * ulp1) == 1 + 2 * ulp1);  // tie: to even
  CHECK(ref::round_to(DataType::float16, 1 + 0.6 * ulp1) == 1 + ulp1);
  CHECK(ref::round_to(DataType::float16, 65519.0) == 65504.0);
  CHECK(ref::round_to(DataType::float16, 65520.0) == kInf);  // rounds past the largest finite
  CHECK(ref::round_to(DataType::float16, -65520.0) == -kInf);
  CHECK(ref::round_to(DataType::float16, std::ldexp(1.0, -25)) == 0.0);  // subnormal tie
  CHECK(ref::round_to(DataType::float16, std::ldexp(3.0, -25)) == std::ldexp(1.0, -23));
  CHECK(ref::round_to(DataType::bfloat16, 257.0) == 256.0);  // 8 bits: 257 is a tie
  CHECK(ref::round_to(DataType::bfloat16, 259.0) == 260.0);
  CHECK(std::isnan(ref::round_to(DataType::float16, kNan)));
  CHECK(ref::round_to(DataType::float64, 0.1) == 0.1);
  CHECK(std::signbit(ref::round_to(DataType::float32, -0.0)));
  // float32: the same as the compiler's conversion, normal, subnormal and overflowing.
  std::mt19937_64 rng(1);
  for (int i = 0; i < 20000; ++i) {
    const double x = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                                static_cast<int>(rng() % 300) - 160);
    CAPTURE(x);
    CHECK(ref::round_to(DataType::float32, x) == static_cast<double>(static_cast<float>(x)));
  }
}

TEST_CASE("float16 and bfloat16 bits: worked examples and every bit pattern") {
  CHECK(ref::half_bits(1.0) == 0x3c00);
  CHECK(ref::half_bits(-2.0) == 0xc000);
  CHECK(ref::half_bits(65504.0) == 0x7bff);
  CHECK(ref::half_bits(std::ldexp(1.0, -14)) == 0x0400);
  CHECK(ref::half_bits(std::ldexp(1.0, -24)) == 0x0001);
  CHECK(ref::half_bits(-0.0) == 0x8000);
  CHECK(ref::half_bits(kInf) == 0x7c00);
  CHECK(ref::half_bits(1e6) == 0x7c00);
  CHECK(ref::half_bits(kNan) == 0x7e00);
  CHECK(ref::bfloat16_bits(1.0) == 0x3f80);
  CHECK(ref::bfloat16_bits(-3.0) == 0xc040);
  CHECK(ref::bfloat16_bits(kNan) == 0x7fc0);
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const double h = ref::half_value(bits), f = ref::bfloat16_value(bits);
    CAPTURE(b);
    if (std::isnan(h))
      CHECK(((b >> 10) & 0x1f) == 0x1f);
    else
      CHECK(ref::half_bits(h) == bits);
    if (std::isnan(f))
      CHECK(((b >> 7) & 0xff) == 0xff);
    else
      CHECK(ref::bfloat16_bits(f) == bits);
  }
}

TEST_CASE("load and store every type at any offset, integers wrap") {
  const DataType all[] = {DataType::int8,    DataType::uint8,   DataType::int32,
                          DataType::int64,   DataType::float16, DataType::bfloat16,
                          DataType::float32, DataType::float64};
  for (DataType t : all) {
    CAPTURE(static_cast<int>(t));
    std::vector<unsigned char> buf(8 * 9 + 1);
    void* odd = buf.data() + 1;  // misaligned for every type wider than a byte
    for (size_t i = 0; i < 8; ++i) ref::store(t, odd, i, static_cast<double>(i) - 3);
    for (size_t i = 0; i < 8; ++i)
      CHECK(ref::load(t, odd, i) == (t == DataType::uint8 ? (i + 253) % 256 : i - 3.0));
  }
  CHECK(ref::wrap(DataType::int8, 128) == -128);
  CHECK(ref::wrap(DataType::uint8, -1) == 255);
  CHECK(ref::wrap(DataType::int32, int64_t{1} << 31) == std::numeric_limits<int32_t>::min());
  CHECK(ref::wrap(DataType::int64, std::numeric_limits<int64_t>::min()) ==
        std::numeric_limits<int64_t>::min());
  int64_t big[1];
  ref::store_int(DataType::int64, big, 0, std::numeric_limits<int64_t>::max());
  CHECK(ref::load_int(DataType::int64, big, 0) == std::numeric_limits<int64_t>::max());
}

TEST_CASE("one step of each op: wrap-around, NaN through min and max, signed zeros") {
  CHECK(ref::combine_int(DataType::int8, ReduceOp::sum, 127, 1) == -128);
  CHECK(ref::combine_int(DataType::int8, ReduceOp::prod, 16, 16) == 0);
  CHECK(ref::combine_int(DataType::uint8, ReduceOp::sum, 255, 1) == 0);
  CHECK(ref::combine_int(DataType::int64, ReduceOp::sum, std::numeric_limits<int64_t>::max(), 1) ==
        std::numeric_limits<int64_t>::min());
  CHECK(ref::combine_int(DataType::int32, ReduceOp::min, -5, 3) == -5);
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
    CHECK(std::isnan(ref::combine_real(op, kNan, 1)));
    CHECK(std::isnan(ref::combine_real(op, 1, kNan)));
    CHECK_FALSE(std::signbit(ref::combine_real(op, -0.0, 0.0)));  // equal: the second
    CHECK(std::signbit(ref::combine_real(op, 0.0, -0.0)));
  }
  CHECK(std::isnan(ref::combine_real(ReduceOp::sum, kInf, -kInf)));
}

TEST_CASE("reduction over ranks: integer avg truncates the wrapped sum, float avg divides once") {
  const double in8[] = {100, 100, -7};  // int8: 193 wraps to -63; avg -21
  auto e = ref::reduction(DataType::int8, ReduceOp::sum, 3, [&](int r) { return in8[r]; });
  CHECK(e.value == -63);
  CHECK(e.tolerance == 0);
  e = ref::reduction(DataType::int8, ReduceOp::avg, 3, [&](int r) { return in8[r]; });
  CHECK(e.value == -21);
  const double in[] = {4, -4, 1};
  e = ref::reduction(DataType::float32, ReduceOp::avg, 3, [&](int r) { return in[r]; });
  CHECK(e.value == doctest::Approx(1.0 / 3));
  CHECK(e.tolerance > 0);
  CHECK(ref::matches(e, static_cast<float>(1.0 / 3)));
  CHECK_FALSE(ref::matches(e, static_cast<float>(1.0 / 3) * (1 + 1e-5)));
  CHECK_FALSE(ref::matches(e, kNan));
  e = ref::reduction(DataType::float32, ReduceOp::sum, 3, [&](int r) { return in[r]; });
  CHECK(e.value == 1);
  CHECK(e.tolerance == 0);
  // The avg bound is the smaller of the any-order bound and the one-division bound.
  const double u = ref::unit_roundoff(DataType::float16);
  CHECK(ref::tolerance(DataType::float16, ReduceOp::avg, 3, 9, 1.0 / 3) ==
        doctest::Approx(std::ldexp(1.0, -9)));
  CHECK(ref::tolerance(DataType::float16, ReduceOp::avg, 2, 2, 1) ==
        doctest::Approx(2 * u * (1 + 2 * u)));
}
