// Byte grouping (Blosc's "shuffle"): the k-th byte of every element together, so that bytes of
// equal significance — the often equal exponents and sign bytes of floats, the zero high bytes of
// small integers — stand side by side for the entropy coder.
#pragma once

#include <cstddef>

namespace hcomm::compression {

/// out[k * n + i] = src[i * esize + k] for the n = bytes / esize whole elements; the bytes past
/// the last whole element follow unchanged. `out` holds `bytes` bytes and does not overlap src.
void group_bytes(const void* src, size_t bytes, size_t esize, void* out);
/// The inverse of group_bytes().
void ungroup_bytes(const void* src, size_t bytes, size_t esize, void* out);

}  // namespace hcomm::compression
