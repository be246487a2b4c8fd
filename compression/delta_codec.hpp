// The delta codec, lossless: a payload encoded against the stream's previous one (its base) as
// a map of the elements that changed and the XOR of those elements, each part through zstd
// (the XOR bytes grouped by significance first). Unchanged data costs a few bytes; 10% of the
// elements changed costs about 12% of the payload. When the map form would not be smaller, the
// payload goes whole ("raw" inside a delta frame), so the receiver still learns the new base.
//
// Keeping bases per stream and making sure both ends use the same one is the caller's job
// (collectives/codec_streams). Element width for the map: the element size, at least 4 bytes.
// Same conventions as zstd_codec.hpp: encoders append to `out`; decoders check all they read.
#pragma once

#include <cstddef>
#include <vector>

#include "hcomm/status.hpp"

namespace hcomm::compression {

/// Appends the delta encoding of `bytes` bytes of `src` against `base` (`bytes` bytes; nullptr:
/// a base of zeros) to `out`. Returns false when it sent the payload raw (did not shrink).
bool delta_encode(const void* src, const void* base, size_t bytes, size_t esize,
                  std::vector<std::byte>& out);
/// Decodes `in` against `base` (nullptr: zeros) into exactly `bytes` at `out`; `out` may be
/// `base` itself.
Status delta_decode(const void* in, size_t in_bytes, const void* base, size_t esize, void* out,
                    size_t bytes);

}  // namespace hcomm::compression
