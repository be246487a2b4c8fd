#include "compression/byte_group.hpp"

#include <cstdint>
#include <cstring>

namespace hcomm::compression {
namespace {

/// The two directions of the transpose: kGroup reads elements and writes planes (byte k of
/// element i to k * n + i), !kGroup the reverse. Always inlined, so that the calls with a
/// constant element size below get their inner loop unrolled.
template <bool kGroup>
inline __attribute__((always_inline)) void transpose_loop(const uint8_t* s, size_t n, size_t esize,
                                                          uint8_t* o) {
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < esize; ++k) {
      if (kGroup)
        o[k * n + i] = s[i * esize + k];
      else
        o[i * esize + k] = s[k * n + i];
    }
}

template <bool kGroup>
void transpose(const void* src, size_t bytes, size_t esize, void* out) {
  const auto* s = static_cast<const uint8_t*>(src);
  auto* o = static_cast<uint8_t*>(out);
  if (esize <= 1) {
    std::memcpy(o, s, bytes);
    return;
  }
  const size_t n = bytes / esize;
  switch (esize) {
    case 2:
      transpose_loop<kGroup>(s, n, 2, o);
      break;
    case 4:
      transpose_loop<kGroup>(s, n, 4, o);
      break;
    case 8:
      transpose_loop<kGroup>(s, n, 8, o);
      break;
    default:
      transpose_loop<kGroup>(s, n, esize, o);
  }
  std::memcpy(o + n * esize, s + n * esize, bytes - n * esize);
}

}  // namespace

void group_bytes(const void* src, size_t bytes, size_t esize, void* out) {
  transpose<true>(src, bytes, esize, out);
}

void ungroup_bytes(const void* src, size_t bytes, size_t esize, void* out) {
  transpose<false>(src, bytes, esize, out);
}

}  // namespace hcomm::compression
