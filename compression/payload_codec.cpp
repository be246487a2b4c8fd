#include "compression/payload_codec.hpp"

#include <cstdint>
#include <cstring>

#include "compression/delta_codec.hpp"
#include "compression/half_codec.hpp"
#include "compression/zstd_codec.hpp"

namespace hcomm::compression {
namespace {

enum ZstdForm : uint8_t { kGrouped = 0, kSparse = 1 };

/// Whether at least a quarter of the elements (of `esize` bytes, at least 4) are zero.
bool mostly_sparse(const void* src, size_t bytes, size_t esize) {
  const size_t w = esize < 4 ? 4 : esize;
  const size_t n = bytes / w;
  if (n == 0) return false;
  const auto* p = static_cast<const uint8_t*>(src);
  size_t zeros = 0;
  if (w == 4) {
    for (size_t i = 0; i < n; ++i) {
      uint32_t v;
      std::memcpy(&v, p + i * 4, 4);
      zeros += v == 0;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      uint64_t v = 0;
      for (size_t k = 0; k < w; k += 8) {
        uint64_t part = 0;
        std::memcpy(&part, p + i * w + k, w - k < 8 ? w - k : 8);
        v |= part;
      }
      zeros += v == 0;
    }
  }
  return zeros * 4 >= n;
}

}  // namespace

Codec encode_payload(Codec want, DataType dtype, const void* src, size_t bytes, const void* base,
                     std::vector<std::byte>& out) {
  out.clear();
  if (!applies_to(want, dtype) || bytes == 0) return Codec::none;
  const size_t esize = dtype_size(dtype);
  switch (want) {
    case Codec::none:
      return Codec::none;
    case Codec::fp16:
    case Codec::bf16: {
      const size_t count = bytes / esize;
      out.resize(count * kHalfBytes);
      const Codec got =
          encode_half(want, src, count, dtype, reinterpret_cast<uint16_t*>(out.data()));
      if (got == Codec::none) out.clear();
      return got;
    }
    case Codec::delta:
      delta_encode(src, base, bytes, esize, out);
      return Codec::delta;
    case Codec::zstd: {
      const bool sparse = mostly_sparse(src, bytes, esize);
      out.push_back(std::byte{sparse ? kSparse : kGrouped});
      const bool shrunk = sparse ? delta_encode(src, nullptr, bytes, esize, out)
                                 : zstd_encode(src, bytes, esize, out);
      if (!shrunk || out.size() >= bytes) {
        out.clear();
        return Codec::none;
      }
      return Codec::zstd;
    }
  }
  return Codec::none;
}

Status decode_payload(Codec codec, DataType dtype, const void* in, size_t in_bytes,
                      const void* base, void* out, size_t bytes) {
  const size_t esize = dtype_size(dtype);
  auto wrong = [&](const char* what) {
    return Status{HCOMM_ERR_TRANSPORT, std::string("a ") + codec_name(codec) +
                                           " payload could not be decoded (" + what + ")"};
  };
  switch (codec) {
    case Codec::none:
      if (in_bytes != bytes) return wrong("wrong size");
      std::memcpy(out, in, bytes);
      return {};
    case Codec::fp16:
    case Codec::bf16:
      if (!applies_to(codec, dtype) || in_bytes * esize != bytes * kHalfBytes)
        return wrong("wrong size or type");
      decode_half(codec, static_cast<const uint16_t*>(in), bytes / esize, dtype, out);
      return {};
    case Codec::delta:
      return delta_decode(in, in_bytes, base, esize, out, bytes);
    case Codec::zstd: {
      if (in_bytes < 1) return wrong("empty");
      const auto* p = static_cast<const uint8_t*>(in);
      if (p[0] == kSparse) return delta_decode(p + 1, in_bytes - 1, nullptr, esize, out, bytes);
      if (p[0] == kGrouped) return zstd_decode(p + 1, in_bytes - 1, esize, out, bytes);
      return wrong("unknown form");
    }
  }
  return wrong("unknown codec");
}

}  // namespace hcomm::compression
