// The lossless zstd codec: bytes grouped by significance (byte_group.hpp), then zstd level 1.
//
// Encoders append to `out` (callers may put a prefix of their own first) and give up — `out`
// as it was — when the result would not be smaller than the input: such a payload goes raw.
// Decoders check everything they read; a corrupt or truncated payload, or one of another size,
// is a non-OK Status (HCOMM_ERR_TRANSPORT), never a write past `out`. Any thread; each thread
// keeps its own zstd contexts.
#pragma once

#include <cstddef>
#include <vector>

#include "hcomm/status.hpp"

namespace hcomm::compression {

/// Appends the encoding of `bytes` bytes of `src` (elements of `esize` bytes) to `out`; false
/// (out unchanged) when it would not shrink the payload.
bool zstd_encode(const void* src, size_t bytes, size_t esize, std::vector<std::byte>& out);
/// Decodes `in_bytes` of `in`, made by zstd_encode() with `esize`, into exactly `bytes` at `out`.
Status zstd_decode(const void* in, size_t in_bytes, size_t esize, void* out, size_t bytes);

namespace internal {
/// zstd level 1 of `bytes` at `src` appended to `out` (no grouping); false when not smaller than
/// `limit` bytes.
bool zstd_append(const void* src, size_t bytes, size_t limit, std::vector<std::byte>& out);
/// Decompresses exactly `bytes` into `out`.
Status zstd_expand(const void* in, size_t in_bytes, void* out, size_t bytes);
/// A per-thread scratch buffer of at least `bytes` (valid until the next call on this thread).
std::byte* scratch(size_t bytes, int which);
}  // namespace internal

}  // namespace hcomm::compression
