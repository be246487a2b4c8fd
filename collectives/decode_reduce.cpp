#include "collectives/decode_reduce.hpp"

#include <cstdint>
#include <cstring>

#include "collectives/reduce_kernels.hpp"
#include "compression/half_codec.hpp"

namespace hcomm::collectives {
namespace {

constexpr size_t kBlock = 1024;  // 2 KiB of wire, 4-8 KiB decoded: stays in L1

/// buf[i] = decode(encode(buf[i])) in `codec` (or its overflow fallback), in place.
void round_block(compression::Codec codec, void* buf, size_t n, DataType dtype, uint16_t* tmp) {
  const compression::Codec got = compression::encode_half(codec, buf, n, dtype, tmp);
  if (got != compression::Codec::none) compression::decode_half(got, tmp, n, dtype, buf);
}

}  // namespace

void decode_reduce(compression::Codec codec, const void* wire, size_t count, DataType dtype,
                   ReduceOp op, void* dst, const void* a) {
  const size_t es = dtype_size(dtype);
  alignas(64) uint16_t in[kBlock];
  alignas(64) double decoded[kBlock];  // room for float64
  alignas(64) double local[kBlock];
  const auto* w = static_cast<const std::byte*>(wire);
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(a);
  for (size_t i = 0; i < count; i += kBlock) {
    const size_t n = count - i < kBlock ? count - i : kBlock;
    std::memcpy(in, w + i * compression::kHalfBytes, n * compression::kHalfBytes);
    compression::decode_half(codec, in, n, dtype, decoded);
    std::memcpy(local, s + i * es, n * es);
    round_block(codec, local, n, dtype, in);
    reduce(local, local, decoded, n, dtype, op);
    round_block(codec, local, n, dtype, in);
    std::memcpy(d + i * es, local, n * es);
  }
}

void reduce_rounded(compression::Codec codec, void* dst, const void* a, const void* b, size_t count,
                    DataType dtype, ReduceOp op) {
  const size_t es = dtype_size(dtype);
  alignas(64) uint16_t tmp[kBlock];
  alignas(64) double x[kBlock], y[kBlock];
  auto* d = static_cast<std::byte*>(dst);
  const auto* pa = static_cast<const std::byte*>(a);
  const auto* pb = static_cast<const std::byte*>(b);
  for (size_t i = 0; i < count; i += kBlock) {
    const size_t n = count - i < kBlock ? count - i : kBlock;
    std::memcpy(x, pa + i * es, n * es);
    std::memcpy(y, pb + i * es, n * es);
    round_block(codec, x, n, dtype, tmp);
    round_block(codec, y, n, dtype, tmp);
    reduce(x, x, y, n, dtype, op);
    round_block(codec, x, n, dtype, tmp);
    std::memcpy(d + i * es, x, n * es);
  }
}

void round_to(compression::Codec codec, void* buf, size_t count, DataType dtype) {
  if (!compression::is_lossy(codec) || !compression::applies_to(codec, dtype)) return;
  const size_t es = dtype_size(dtype);
  alignas(64) uint16_t tmp[kBlock];
  auto* b = static_cast<std::byte*>(buf);
  for (size_t i = 0; i < count; i += kBlock)
    round_block(codec, b + i * es, count - i < kBlock ? count - i : kBlock, dtype, tmp);
}

void decode_into(compression::Codec codec, const void* wire, size_t count, DataType dtype,
                 void* dst) {
  const size_t es = dtype_size(dtype);
  alignas(64) uint16_t in[kBlock];
  const auto* w = static_cast<const std::byte*>(wire);
  auto* d = static_cast<std::byte*>(dst);
  for (size_t i = 0; i < count; i += kBlock) {
    const size_t n = count - i < kBlock ? count - i : kBlock;
    std::memcpy(in, w + i * compression::kHalfBytes, n * compression::kHalfBytes);
    compression::decode_half(codec, in, n, dtype, d + i * es);
  }
}

}  // namespace hcomm::collectives
