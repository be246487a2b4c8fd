// One entry point per direction for a frame's payload, whatever its codec: what the schedule
// executor calls. The lossy codecs also decode piece by piece (half_codec.hpp) so that a
// receiver can reduce as bytes arrive; the lossless ones decode a whole payload.
//
// zstd picks one of two forms per payload, named by its first byte: when at least a quarter of
// the elements are zero, a map of the non-zero elements and their grouped bytes (the delta form
// against a base of zeros, which pays for positions once per element, not once per byte);
// otherwise the grouped bytes of everything. Both then go through zstd level 1.
#pragma once

#include <cstddef>
#include <vector>

#include "compression/codec.hpp"
#include "hcomm/status.hpp"

namespace hcomm::compression {

/// Encodes `bytes` at `src` (elements of `dtype`) with `want` into `out` (cleared first); `base`
/// is the delta stream's previous payload of `bytes` bytes (nullptr: none). Returns the codec
/// `out` is in; none when the payload should travel as it is (it would not shrink, or `want`
/// does not apply to `dtype`). A delta payload always comes back as delta (it may hold the
/// payload whole), so that the receiver's base follows.
Codec encode_payload(Codec want, DataType dtype, const void* src, size_t bytes, const void* base,
                     std::vector<std::byte>& out);

/// Decodes `in_bytes` at `in`, in `codec`, into exactly `bytes` at `out` (`base` as for
/// encode_payload; `out` may equal `base`). A payload that is damaged or decodes to another size
/// is an error (HCOMM_ERR_TRANSPORT).
Status decode_payload(Codec codec, DataType dtype, const void* in, size_t in_bytes,
                      const void* base, void* out, size_t bytes);

}  // namespace hcomm::compression
