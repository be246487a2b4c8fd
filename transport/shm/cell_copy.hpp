// Copying payload into and out of ring cells. Not memcpy: glibc copies blocks of this size with
// `rep movsb`, which is slow when the source lines sit in the other core's cache, as ring cells
// do; a plain vector loop is not.
//
// For a destination too large to stay in cache, non-temporal stores write it without first
// reading every line in (a regular store's read-for-ownership). Only for large frames: a
// destination that fits in cache is better left there for the application's next read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hcomm::transport::shm {

#if defined(__SSE2__)
namespace detail {

/// Copies 64-byte blocks from offset `i` while whole ones remain; returns where it stopped.
/// `kStreaming`: non-temporal stores (dst + i must then be 16-byte aligned).
template <bool kStreaming>
inline size_t copy_blocks(std::byte* dst, const std::byte* src, size_t i, size_t n) {
  for (; i + 64 <= n; i += 64) {
    __m128i v[4];
    for (int k = 0; k < 4; ++k)
      v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16 * k));
    for (int k = 0; k < 4; ++k) {
      auto* out = reinterpret_cast<__m128i*>(dst + i + 16 * k);
      if constexpr (kStreaming)
        _mm_stream_si128(out, v[k]);
      else
        _mm_storeu_si128(out, v[k]);
    }
  }
  return i;
}

}  // namespace detail
#endif

/// memcpy for cell-sized blocks, with a vector loop.
inline void cell_copy(std::byte* dst, const std::byte* src, size_t n) {
#if defined(__SSE2__)
  const size_t i = detail::copy_blocks<false>(dst, src, 0, n);
  std::memcpy(dst + i, src + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

/// cell_copy with streaming stores; the caller issues stream_fence() before others may read
/// `dst`.
inline void stream_copy(std::byte* dst, const std::byte* src, size_t n) {
#if defined(__SSE2__)
  const size_t head = (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16;
  if (n < head + 64) {
    std::memcpy(dst, src, n);
    return;
  }
  std::memcpy(dst, src, head);
  const size_t i = detail::copy_blocks<true>(dst, src, head, n);
  std::memcpy(dst + i, src + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

/// Orders earlier streaming stores before what follows (publishing a completion).
inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace hcomm::transport::shm
