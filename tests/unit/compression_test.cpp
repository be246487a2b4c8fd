// Tests for the codecs of compression/: the lossy ones against the independent rounding of
// hcomm_reference, the lossless ones round trip bit-exact with the sizes they promise, and every
// decoder against damaged input.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "compression/byte_group.hpp"
#include "compression/codec_speed.hpp"
#include "compression/delta_codec.hpp"
#include "compression/half_codec.hpp"
#include "compression/payload_codec.hpp"
#include "compression/zstd_codec.hpp"
#include "reference/elements.hpp"
#include "tests/unit/facility.hpp"

namespace {

using hcomm::DataType;
using hcomm::compression::Codec;
namespace cz = hcomm::compression;
namespace ref = hcomm::tools::reference;

std::vector<float> gradient(size_t n, double zeros, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> value(0.0f, 1e-2f);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen) < zeros ? 0.0f : value(gen);
  return v;
}

std::vector<float> special_values() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f,     -0.0f,     1.0f,      -1.0f,         0.1f,
                          65504.0f, -65504.0f, 1e-7f,     -3e-8f,        6e-8f,
                          1e-30f,   2.5f,      inf,       -inf,          std::nanf(""),
                          65519.0f, 3.14159f,  -2.71828f, 1.0009765625f, 1e4f};
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> bits(0, 0x477fdfffu);  // finite, below 65520
  for (int i = 0; i < 5000; ++i) {
    uint32_t u = bits(gen) | (i % 2 ? 0x80000000u : 0);
    float f;
    std::memcpy(&f, &u, sizeof f);
    v.push_back(f);
  }
  return v;
}

}  // namespace

TEST_CASE("fp16 codec: every element rounds to nearest even as the reference does") {
  const auto v = special_values();
  std::vector<uint16_t> wire(v.size()), portable(v.size());
  REQUIRE(cz::encode_half(Codec::fp16, v.data(), v.size(), DataType::float32, wire.data()) ==
          Codec::fp16);
  REQUIRE(cz::internal::encode_half_portable(Codec::fp16, v.data(), v.size(), DataType::float32,
                                             portable.data()) == Codec::fp16);
  std::vector<float> back(v.size());
  cz::decode_half(Codec::fp16, wire.data(), v.size(), DataType::float32, back.data());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i << " = " << v[i]);
    if (std::isnan(v[i])) {
      CHECK(std::isnan(back[i]));
      continue;
    }
    CHECK(wire[i] == ref::half_bits(v[i]));
    CHECK(portable[i] == wire[i]);
    CHECK(static_cast<double>(back[i]) == ref::half_value(wire[i]));
  }
}

TEST_CASE("bf16 codec: rounds as the reference, keeps inf and NaN, float64 through float32") {
  const auto v = special_values();
  std::vector<uint16_t> wire(v.size());
  REQUIRE(cz::encode_half(Codec::bf16, v.data(), v.size(), DataType::float32, wire.data()) ==
          Codec::bf16);
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) {
      CHECK((wire[i] & 0x7f80u) == 0x7f80u);
      CHECK((wire[i] & 0x7fu) != 0);
    } else {
      CHECK(wire[i] == ref::bfloat16_bits(v[i]));
    }
  }
  std::vector<double> d = {1.0, -0.1, 1e300 * 0, 12345.678, 1e-20};
  std::vector<uint16_t> dw(d.size());
  std::vector<double> back(d.size());
  REQUIRE(cz::encode_half(Codec::fp16, d.data(), d.size(), DataType::float64, dw.data()) ==
          Codec::fp16);
  cz::decode_half(Codec::fp16, dw.data(), d.size(), DataType::float64, back.data());
  const auto err = cz::half_error(Codec::fp16);
  for (size_t i = 0; i < d.size(); ++i)
    CHECK(std::fabs(back[i] - d[i]) <= err.relative * std::fabs(d[i]) + err.absolute);
}

TEST_CASE("fp16 codec: a finite value beyond binary16 sends the payload as bf16, never inf") {
  std::vector<float> v = {1.0f, 2.0f, 70000.0f, -3.0f, 1e-3f, 0.5f, 7.0f, 8.0f, 9.0f, 10.0f};
  std::vector<uint16_t> wire(v.size());
  CHECK(cz::encode_half(Codec::fp16, v.data(), v.size(), DataType::float32, wire.data()) ==
        Codec::bf16);
  std::vector<float> back(v.size());
  cz::decode_half(Codec::bf16, wire.data(), v.size(), DataType::float32, back.data());
  for (float b : back) CHECK(std::isfinite(b));
  // Beyond bfloat16 too (rounds up to infinity): raw.
  v[3] = std::numeric_limits<float>::max();
  CHECK(cz::encode_half(Codec::fp16, v.data(), v.size(), DataType::float32, wire.data()) ==
        Codec::none);
  // float64 beyond float32: raw.
  std::vector<double> d = {1.0, 1e300};
  std::vector<uint16_t> dw(2);
  CHECK(cz::encode_half(Codec::bf16, d.data(), 2, DataType::float64, dw.data()) == Codec::none);
  // Integers are not encoded.
  CHECK(cz::encode_half(Codec::fp16, v.data(), 2, DataType::int32, wire.data()) == Codec::none);
}

TEST_CASE("byte grouping round trips every element size, tail bytes included") {
  std::vector<uint8_t> src(1003), grouped(1003), back(1003);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 37 + 11);
  for (size_t es : {1, 2, 3, 4, 8}) {
    cz::group_bytes(src.data(), src.size(), es, grouped.data());
    if (es == 4) CHECK(grouped[1] == src[4]);
    cz::ungroup_bytes(grouped.data(), src.size(), es, back.data());
    CHECK(back == src);
  }
}

TEST_CASE("zstd codec: a sparse gradient shrinks below 20%, random bytes stay raw, bit-exact") {
  const auto g = gradient(1 << 20, 0.9, 3);
  const size_t bytes = g.size() * sizeof(float);
  std::vector<std::byte> out;
  REQUIRE(cz::encode_payload(Codec::zstd, DataType::float32, g.data(), bytes, nullptr, out) ==
          Codec::zstd);
  MESSAGE("90% zeros: " << 100.0 * out.size() / bytes << "% of the bytes");
  CHECK(out.size() <= bytes / 5);
  std::vector<float> back(g.size());
  REQUIRE(cz::decode_payload(Codec::zstd, DataType::float32, out.data(), out.size(), nullptr,
                             back.data(), bytes)
              .ok());
  CHECK(std::memcmp(back.data(), g.data(), bytes) == 0);
  // A dense payload takes the grouped form; small integers shrink a lot.
  std::vector<int32_t> ints(1 << 16);
  for (size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<int32_t>(i % 1000) + 1;
  REQUIRE(cz::encode_payload(Codec::zstd, DataType::int32, ints.data(), ints.size() * 4, nullptr,
                             out) == Codec::zstd);
  CHECK(out.size() < ints.size());
  std::vector<int32_t> iback(ints.size());
  REQUIRE(cz::decode_payload(Codec::zstd, DataType::int32, out.data(), out.size(), nullptr,
                             iback.data(), ints.size() * 4)
              .ok());
  CHECK(iback == ints);
  // Random bytes do not shrink: the payload goes raw.
  std::vector<uint32_t> noise(1 << 16);
  std::mt19937 gen(5);
  for (auto& x : noise) x = gen() | 1;
  CHECK(cz::encode_payload(Codec::zstd, DataType::int32, noise.data(), noise.size() * 4, nullptr,
                           out) == Codec::none);
  CHECK(out.empty());
  std::vector<std::byte> plain;
  CHECK_FALSE(cz::zstd_encode(noise.data(), noise.size() * 4, 4, plain));
  // Damaged or of the wrong size: an error, no write past the output.
  REQUIRE(cz::zstd_encode(ints.data(), ints.size() * 4, 4, plain));
  CHECK_FALSE(
      cz::zstd_decode(plain.data(), plain.size(), 4, iback.data(), ints.size() * 4 - 4).ok());
  plain[plain.size() / 2] ^= std::byte{0x5a};
  plain.resize(plain.size() - 3);
  CHECK_FALSE(cz::zstd_decode(plain.data(), plain.size(), 4, iback.data(), ints.size() * 4).ok());
  const std::byte junk[3] = {std::byte{9}, std::byte{1}, std::byte{2}};
  CHECK_FALSE(
      cz::decode_payload(Codec::zstd, DataType::int32, junk, 3, nullptr, iback.data(), 8).ok());
}

TEST_CASE("delta codec: 10% changed costs at most 15%, unchanged at most 2%, bit-exact") {
  const size_t n = 1 << 20;  // 4 MiB of float32
  auto base = gradient(n, 0.0, 11);
  auto next = base;
  std::mt19937 gen(13);
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  std::normal_distribution<float> value(0.0f, 1.0f);
  for (size_t i = 0; i < n / 10; ++i) next[pick(gen)] = value(gen);
  const size_t bytes = n * sizeof(float);
  std::vector<std::byte> out;
  REQUIRE(cz::delta_encode(next.data(), base.data(), bytes, 4, out));
  MESSAGE("10% changed: " << 100.0 * out.size() / bytes << "% of the bytes");
  CHECK(out.size() <= bytes * 15 / 100);
  std::vector<float> back(n);
  REQUIRE(cz::delta_decode(out.data(), out.size(), base.data(), 4, back.data(), bytes).ok());
  CHECK(std::memcmp(back.data(), next.data(), bytes) == 0);
  // Decoding in place over the base.
  auto inplace = base;
  REQUIRE(cz::delta_decode(out.data(), out.size(), inplace.data(), 4, inplace.data(), bytes).ok());
  CHECK(inplace == next);
  out.clear();
  REQUIRE(cz::delta_encode(next.data(), next.data(), bytes, 4, out));
  MESSAGE("unchanged: " << 100.0 * out.size() / bytes << "% of the bytes");
  CHECK(out.size() <= bytes * 2 / 100);
  // No base (a stream's first payload), an odd size and 1-byte elements.
  std::vector<uint8_t> small(1001, 0);
  small[3] = 9;
  small[1000] = 1;
  out.clear();
  cz::delta_encode(small.data(), nullptr, small.size(), 1, out);
  std::vector<uint8_t> sback(small.size(), 0xee);
  REQUIRE(cz::delta_decode(out.data(), out.size(), nullptr, 1, sback.data(), small.size()).ok());
  CHECK(sback == small);
}

TEST_CASE("delta codec: a payload that does not shrink travels whole, and damage is caught") {
  std::vector<uint32_t> a(4096), b(4096);
  std::mt19937 gen(17);
  for (auto& x : a) x = gen();
  for (auto& x : b) x = gen();
  std::vector<std::byte> out;
  CHECK_FALSE(cz::delta_encode(b.data(), a.data(), b.size() * 4, 4, out));
  CHECK(out.size() <= b.size() * 4 + 16);
  std::vector<uint32_t> back(b.size());
  REQUIRE(cz::delta_decode(out.data(), out.size(), a.data(), 4, back.data(), b.size() * 4).ok());
  CHECK(back == b);
  CHECK_FALSE(cz::delta_decode(out.data(), 8, a.data(), 4, back.data(), b.size() * 4).ok());
  CHECK_FALSE(cz::delta_decode(out.data(), out.size(), a.data(), 4, back.data(), 400).ok());
  out[0] = std::byte{7};
  CHECK_FALSE(
      cz::delta_decode(out.data(), out.size(), a.data(), 4, back.data(), b.size() * 4).ok());
}

TEST_CASE("codec speeds are measured, positive, and the lossy ratio is one half") {
  for (Codec c : {Codec::fp16, Codec::bf16, Codec::zstd, Codec::delta}) {
    const auto& s = cz::codec_speed(c);
    INFO(cz::codec_name(c));
    CHECK(s.encode_bytes_per_us > 0);
    CHECK(s.decode_bytes_per_us > 0);
  }
  CHECK(cz::codec_speed(Codec::fp16).ratio == 0.5);
}
