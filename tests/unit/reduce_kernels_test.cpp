// Tests for the reduction kernels: every dtype x op against the scalar reference of
// hcomm_reference (tools/reference/, in int64/double, independent of the kernels and of
// compression/half_float.hpp), over counts that hit the vector tails, shifted (unaligned)
// buffers and every aliasing form; the AVX2/F16C and the baseline builds must agree bit for bit.
#include "collectives/reduce_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "reference/elements.hpp"
#include "reference/reduction.hpp"
#include "tests/unit/facility.hpp"

namespace {

using hcomm::DataType;
using hcomm::ReduceOp;
namespace collectives = hcomm::collectives;
namespace reference = hcomm::tools::reference;
using reference::is_float;

constexpr DataType kTypes[] = {DataType::int8,    DataType::uint8,   DataType::int32,
                               DataType::int64,   DataType::float16, DataType::bfloat16,
                               DataType::float32, DataType::float64};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max,
                             ReduceOp::avg, ReduceOp::band, ReduceOp::bor, ReduceOp::bxor};
constexpr size_t kCounts[] = {0, 1, 7, 8, 15, 16, 17, 33, 1001, 4099};

/// Which code runs: the public functions (AVX2 + F16C where the CPU has them) or the baseline
/// x86-64 build (SSE2 loops, scalar float16 conversions).
enum class Path { dispatched, portable };

void run_reduce(Path path, void* out, const void* a, const void* b, size_t n, DataType t,
                ReduceOp op) {
  if (path == Path::portable) {
    collectives::internal::reduce_portable(out, a, b, n, t, op);
  } else {
    collectives::reduce(out, a, b, n, t, op);
  }
}

void run_finalize(Path path, void* buf, size_t n, DataType t, int nranks) {
  if (path == Path::portable) {
    collectives::internal::finalize_average_portable(buf, n, t, nranks);
  } else {
    collectives::finalize_average(buf, n, t, nranks);
  }
}

// ---- Typed access to byte buffers; the reference arithmetic is hcomm_reference's ---------------

struct Buffer {
  Buffer(DataType t, size_t n, size_t offset)
      : type(t), size(hcomm::dtype_size(t)), bytes((n + offset) * size + 1), shift(offset) {}
  void* data() { return bytes.data() + shift * size; }
  const void* data() const { return bytes.data() + shift * size; }
  uint8_t* at(size_t i) { return bytes.data() + (shift + i) * size; }
  const uint8_t* at(size_t i) const { return bytes.data() + (shift + i) * size; }

  DataType type;
  size_t size;
  std::vector<uint8_t> bytes;
  size_t shift;
};

int64_t get_int(const uint8_t* p, DataType t) {
  return reference::load_int(t, p, 0);
}

void set_int(uint8_t* p, DataType t, int64_t v) {
  reference::store_int(t, p, 0, v);
}

double get_float(const uint8_t* p, DataType t) {
  return reference::load(t, p, 0);
}

/// Same value and sign, or both NaN.
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

/// Random contents: half the elements arbitrary bit patterns (NaN, inf, subnormals, extremes),
/// half small numbers and signed zeros so that sums, products and ties stay interesting.
void fill(Buffer& buf, size_t n, std::mt19937_64& rng) {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rng();
    uint8_t* p = buf.at(i);
    if ((r & 1) == 0) {
      std::memcpy(p, &r, buf.size);
      continue;
    }
    const int64_t small = static_cast<int64_t>((r >> 8) % 61) - 30;
    if (is_float(buf.type) && (r & 0xe) == 0) {  // +0 and -0, often enough to meet in pairs
      const uint64_t zero = (r & 0x10) != 0 ? uint64_t{1} << (buf.size * 8 - 1) : 0;
      std::memcpy(p, &zero, buf.size);
      continue;
    }
    switch (buf.type) {
      case DataType::float16:
      case DataType::bfloat16:
      case DataType::float32:
      case DataType::float64:
        reference::store(buf.type, p, 0, static_cast<double>(small) / 4);  // exact in each
        break;
      default:
        set_int(p, buf.type, small);
    }
  }
}

/// Index of the first element of `got` that differs from a (op) b, or -1.
long first_mismatch(const Buffer& got, const Buffer& a, const Buffer& b, size_t n, ReduceOp op) {
  const DataType t = got.type;
  for (size_t i = 0; i < n; ++i) {
    bool ok;
    if (is_float(t)) {
      const double want = reference::round_to(
          t, reference::combine_real(op, get_float(a.at(i), t), get_float(b.at(i), t)));
      ok = same(get_float(got.at(i), t), want);
    } else {
      ok = get_int(got.at(i), t) ==
           reference::combine_int(t, op, get_int(a.at(i), t), get_int(b.at(i), t));
    }
    if (!ok) return static_cast<long>(i);
  }
  return -1;
}

/// The aliasing forms reduce() accepts.
enum class Alias { none, out_is_a, out_is_b, a_is_b, all_same };
constexpr Alias kAliases[] = {Alias::none, Alias::out_is_a, Alias::out_is_b, Alias::a_is_b,
                              Alias::all_same};

void check_reduce(Path path, DataType t, ReduceOp op, size_t n, size_t offset, Alias alias,
                  uint64_t seed) {
  const std::string dtype = hcomm::dtype_name(t);
  CAPTURE(dtype);
  const std::string op_name = hcomm::reduce_op_name(op);
  CAPTURE(op_name);
  CAPTURE(n);
  CAPTURE(offset);
  CAPTURE(static_cast<int>(alias));
  CAPTURE(static_cast<int>(path));
  std::mt19937_64 rng(seed);
  Buffer a(t, n, offset), b(t, n, offset), out(t, n, offset);
  fill(a, n, rng);
  fill(b, n, rng);
  if (alias == Alias::a_is_b || alias == Alias::all_same) b = a;
  const Buffer a0 = a, b0 = b;  // the inputs, kept for the reference
  const uint8_t guard = out.bytes.back();
  switch (alias) {
    case Alias::none:
      run_reduce(path, out.data(), a.data(), b.data(), n, t, op);
      break;
    case Alias::out_is_a:
      run_reduce(path, a.data(), a.data(), b.data(), n, t, op);
      break;
    case Alias::out_is_b:
      run_reduce(path, b.data(), a.data(), b.data(), n, t, op);
      break;
    case Alias::a_is_b:
      run_reduce(path, out.data(), a.data(), a.data(), n, t, op);
      break;
    case Alias::all_same:
      run_reduce(path, a.data(), a.data(), a.data(), n, t, op);
      break;
  }
  const Buffer& got = alias == Alias::out_is_a || alias == Alias::all_same ? a
                      : alias == Alias::out_is_b                           ? b
                                                                           : out;
  CHECK(first_mismatch(got, a0, b0, n, op) == -1);
  CHECK(out.bytes.back() == guard);  // nothing written past the end
  if (alias == Alias::none) {
    CHECK(a.bytes == a0.bytes);  // inputs untouched
    CHECK(b.bytes == b0.bytes);
  }
}

}  // namespace

TEST_CASE("reduce matches the scalar reference for every dtype, op, count, offset and alias") {
  uint64_t seed = 1;
  for (Path path : {Path::dispatched, Path::portable}) {
    for (DataType t : kTypes) {
      for (ReduceOp op : kOps) {
        if (!hcomm::reduces(op, t)) continue;
        for (size_t n : kCounts) {
          for (size_t offset : {0, 1}) {
            for (Alias alias : kAliases) check_reduce(path, t, op, n, offset, alias, ++seed);
          }
        }
      }
    }
  }
}

TEST_CASE("reduce_into is reduce with the destination as the first operand") {
  std::mt19937_64 rng(7);
  for (DataType t : kTypes) {
    for (ReduceOp op : kOps) {
      if (!hcomm::reduces(op, t)) continue;
      const std::string dtype = hcomm::dtype_name(t);
      CAPTURE(dtype);
      const std::string op_name = hcomm::reduce_op_name(op);
      CAPTURE(op_name);
      const size_t n = 1001;
      Buffer dst(t, n, 1), src(t, n, 1);
      fill(dst, n, rng);
      fill(src, n, rng);
      const Buffer dst0 = dst;
      collectives::reduce_into(dst.data(), src.data(), n, t, op);
      CHECK(first_mismatch(dst, dst0, src, n, op) == -1);
    }
  }
}

TEST_CASE("avg reduces exactly like sum") {
  std::mt19937_64 rng(11);
  for (DataType t : kTypes) {
    const std::string dtype = hcomm::dtype_name(t);
    CAPTURE(dtype);
    const size_t n = 1001;
    Buffer a(t, n, 0), b(t, n, 0), s(t, n, 0), v(t, n, 0);
    fill(a, n, rng);
    fill(b, n, rng);
    collectives::reduce(s.data(), a.data(), b.data(), n, t, ReduceOp::sum);
    collectives::reduce(v.data(), a.data(), b.data(), n, t, ReduceOp::avg);
    CHECK(s.bytes == v.bytes);
  }
}

TEST_CASE("integer sum and prod wrap around in the element type") {
  int8_t a8[] = {127, -128, 100, 16};
  const int8_t b8[] = {1, -1, 100, 16};
  collectives::reduce_into(a8, b8, 2, DataType::int8, ReduceOp::sum);
  collectives::reduce_into(a8 + 2, b8 + 2, 2, DataType::int8, ReduceOp::prod);
  CHECK(a8[0] == -128);
  CHECK(a8[1] == 127);
  CHECK(a8[2] == 16);  // 10000 mod 256
  CHECK(a8[3] == 0);   // 256 mod 256
  uint8_t u8[] = {255, 16};
  const uint8_t v8[] = {1, 17};
  collectives::reduce_into(u8, v8, 1, DataType::uint8, ReduceOp::sum);
  collectives::reduce_into(u8 + 1, v8 + 1, 1, DataType::uint8, ReduceOp::prod);
  CHECK(u8[0] == 0);
  CHECK(u8[1] == 16);  // 272 mod 256
  int32_t a32[] = {std::numeric_limits<int32_t>::max(), 65536};
  const int32_t b32[] = {1, 65536};
  collectives::reduce_into(a32, b32, 1, DataType::int32, ReduceOp::sum);
  collectives::reduce_into(a32 + 1, b32 + 1, 1, DataType::int32, ReduceOp::prod);
  CHECK(a32[0] == std::numeric_limits<int32_t>::min());
  CHECK(a32[1] == 0);
  int64_t a64[] = {std::numeric_limits<int64_t>::min(), int64_t{1} << 32};
  const int64_t b64[] = {-1, int64_t{1} << 32};
  collectives::reduce_into(a64, b64, 1, DataType::int64, ReduceOp::sum);
  collectives::reduce_into(a64 + 1, b64 + 1, 1, DataType::int64, ReduceOp::prod);
  CHECK(a64[0] == std::numeric_limits<int64_t>::max());
  CHECK(a64[1] == 0);
}

TEST_CASE("float min and max return NaN when either operand is NaN") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
    const std::string op_name = hcomm::reduce_op_name(op);
    CAPTURE(op_name);
    float a[] = {nan, 1.0f, nan, -0.0f, 0.0f};
    const float b[] = {1.0f, nan, nan, 0.0f, -0.0f};
    collectives::reduce_into(a, b, 5, DataType::float32, op);
    CHECK(std::isnan(a[0]));
    CHECK(std::isnan(a[1]));
    CHECK(std::isnan(a[2]));
    CHECK(!std::signbit(a[3]));  // equal operands: the second one
    CHECK(std::signbit(a[4]));
    double d[] = {1.0, nan};
    const double e[] = {nan, 2.0};
    collectives::reduce_into(d, e, 2, DataType::float64, op);
    CHECK(std::isnan(d[0]));
    CHECK(std::isnan(d[1]));
    for (DataType t : {DataType::float16, DataType::bfloat16}) {
      const uint16_t one = t == DataType::float16 ? 0x3c00 : 0x3f80;
      const uint16_t qnan = t == DataType::float16 ? 0x7e00 : 0x7fc0;
      uint16_t h[] = {qnan, one, qnan};
      const uint16_t g[] = {one, qnan, qnan};
      collectives::reduce_into(h, g, 3, t, op);
      for (uint16_t v : h) {
        uint8_t bytes[8] = {};  // get_float may read up to 8 bytes for wider types
        std::memcpy(bytes, &v, sizeof(v));
        CHECK(std::isnan(get_float(bytes, t)));
      }
    }
  }
}

TEST_CASE("count 0 touches nothing, not even null pointers") {
  // Null pointers: a crash fails the case. Real buffers: every byte must stay as it was.
  constexpr uint8_t kFill = 0x5a;
  std::vector<uint8_t> dst(64, kFill), a(64, 0x11), b(64, 0x22);
  for (DataType t : kTypes) {
    const std::string dtype = hcomm::dtype_name(t);
    CAPTURE(dtype);
    for (ReduceOp op : kOps) {
      collectives::reduce(nullptr, nullptr, nullptr, 0, t, op);
      collectives::reduce_into(nullptr, nullptr, 0, t, op);
      collectives::reduce(dst.data(), a.data(), b.data(), 0, t, op);
      collectives::reduce_into(dst.data() + 8, b.data(), 0, t, op);
    }
    collectives::finalize_average(nullptr, 0, t, 4);
    collectives::finalize_average(dst.data() + 16, 0, t, 4);
    CHECK(std::count(dst.begin(), dst.end(), kFill) == 64);
  }
  CHECK(std::count(a.begin(), a.end(), uint8_t{0x11}) == 64);
  CHECK(std::count(b.begin(), b.end(), uint8_t{0x22}) == 64);
}

TEST_CASE("an invalid dtype or op writes nothing") {
  int32_t a[] = {1, 2};
  const int32_t b[] = {3, 4};
  collectives::reduce_into(a, b, 2, static_cast<DataType>(200), ReduceOp::sum);
  collectives::reduce_into(a, b, 2, DataType::int32, static_cast<ReduceOp>(200));
  collectives::finalize_average(a, 2, static_cast<DataType>(200), 2);
  CHECK(a[0] == 1);
  CHECK(a[1] == 2);
}

TEST_CASE("finalize_average truncates negative integers toward zero") {
  int8_t i8[] = {-7, -1, -128, 7, 127, -3};
  collectives::finalize_average(i8, 6, DataType::int8, 2);
  CHECK(i8[0] == -3);
  CHECK(i8[1] == 0);
  CHECK(i8[2] == -64);
  CHECK(i8[3] == 3);
  CHECK(i8[4] == 63);
  CHECK(i8[5] == -1);
  int32_t i32[] = {-7, -1, std::numeric_limits<int32_t>::min(), -2147483647, 5};
  collectives::finalize_average(i32, 5, DataType::int32, 3);
  CHECK(i32[0] == -2);
  CHECK(i32[1] == 0);
  CHECK(i32[2] == -715827882);
  CHECK(i32[3] == -715827882);
  CHECK(i32[4] == 1);
  int64_t i64[] = {-7, std::numeric_limits<int64_t>::min(), -1};
  collectives::finalize_average(i64, 3, DataType::int64, 4);
  CHECK(i64[0] == -1);
  CHECK(i64[1] == std::numeric_limits<int64_t>::min() / 4);
  CHECK(i64[2] == 0);
}

TEST_CASE("finalize_average matches the reference for every dtype and rank count") {
  std::mt19937_64 rng(3);
  for (Path path : {Path::dispatched, Path::portable}) {
    for (DataType t : kTypes) {
      for (int nranks : {1, 2, 3, 7, 8, 255, 1000, 1 << 24, std::numeric_limits<int>::max()}) {
        if (is_float(t) && nranks > (1 << 24)) continue;  // the divisor is rounded to float
        for (size_t n : {size_t{1}, size_t{17}, size_t{1001}}) {
          const std::string dtype = hcomm::dtype_name(t);
          CAPTURE(dtype);
          CAPTURE(nranks);
          CAPTURE(n);
          Buffer buf(t, n, 1);
          fill(buf, n, rng);
          if (t == DataType::int8 || t == DataType::uint8) {  // every value, then random ones
            for (size_t i = 0; i < std::min<size_t>(n, 256); ++i) *buf.at(i) = uint8_t(i);
          }
          const Buffer before = buf;
          run_finalize(path, buf.data(), n, t, nranks);
          long bad = -1;
          for (size_t i = 0; i < n && bad < 0; ++i) {
            const bool ok = is_float(t)
                                ? same(get_float(buf.at(i), t),
                                       reference::round_to(t, get_float(before.at(i), t) / nranks))
                                : get_int(buf.at(i), t) == get_int(before.at(i), t) / nranks;
            if (!ok) bad = static_cast<long>(i);
          }
          CHECK(bad == -1);
        }
      }
    }
  }
}

TEST_CASE("the AVX2/F16C and the baseline kernels agree bit for bit") {
  // Without them only the baseline kernels are in use: nothing to compare.
  if (!hcomm_test::require_facility("AVX2+F16C", collectives::internal::has_avx2_f16c(),
                                    "an x86-64 CPU with AVX2 and F16C (Intel Haswell, AMD "
                                    "Excavator or later)"))
    return;
  std::mt19937_64 rng(5);
  for (DataType t : kTypes) {
    const size_t size = hcomm::dtype_size(t);
    for (size_t n : kCounts) {
      // Arbitrary bit patterns: NaNs, infinities, subnormals, extremes.
      std::vector<uint8_t> a((n + 1) * size), b((n + 1) * size);
      for (auto& byte : a) byte = static_cast<uint8_t>(rng());
      for (auto& byte : b) byte = static_cast<uint8_t>(rng());
      const std::string dtype = hcomm::dtype_name(t);
      CAPTURE(dtype);
      CAPTURE(n);
      for (ReduceOp op : kOps) {
        if (!hcomm::reduces(op, t)) continue;
        const std::string op_name = hcomm::reduce_op_name(op);
        CAPTURE(op_name);
        std::vector<uint8_t> v(a.size()), p(a.size());
        collectives::reduce(v.data() + size, a.data() + size, b.data() + size, n, t, op);
        collectives::internal::reduce_portable(p.data() + size, a.data() + size, b.data() + size, n,
                                               t, op);
        long bad = -1;
        for (size_t i = 0; i <= n && bad < 0; ++i) {
          // Which NaN a NaN result carries is unspecified; everything else must match exactly.
          const bool both_nan = is_float(t) && std::isnan(get_float(&v[i * size], t)) &&
                                std::isnan(get_float(&p[i * size], t));
          if (std::memcmp(&v[i * size], &p[i * size], size) != 0 && !both_nan) {
            bad = static_cast<long>(i);
          }
        }
        CHECK(bad == -1);
      }
      for (int nranks : {2, 3, 1000}) {
        std::vector<uint8_t> v(a), p(a);
        collectives::finalize_average(v.data() + size, n, t, nranks);
        collectives::internal::finalize_average_portable(p.data() + size, n, t, nranks);
        long bad = -1;
        for (size_t i = 0; i <= n && bad < 0; ++i) {
          const bool both_nan = is_float(t) && std::isnan(get_float(&v[i * size], t)) &&
                                std::isnan(get_float(&p[i * size], t));
          if (std::memcmp(&v[i * size], &p[i * size], size) != 0 && !both_nan) {
            bad = static_cast<long>(i);
          }
        }
        CHECK(bad == -1);
      }
    }
  }
}
