// compression/: pure codecs for frame payloads. Nothing here keeps state between calls, touches a
// link or allocates behind the caller's back except the output vectors it is handed; every
// function may be called from any thread.
//
// This file: the codecs a frame can carry, as named in its header (transport::FrameHeader's
// codec bits), and what each applies to.
#pragma once

#include <cstdint>

#include "hcomm/types.hpp"

namespace hcomm::compression {

/// A payload's encoding on the wire. The values are the wire ids (3 bits).
enum class Codec : uint8_t {
  none = 0,   ///< the payload as the application's elements
  fp16 = 1,   ///< float32/float64 rounded to IEEE binary16 (lossy)
  bf16 = 2,   ///< float32/float64 rounded to bfloat16 (lossy)
  delta = 3,  ///< changed-element map and XOR against the stream's last payload, then zstd
  zstd = 4,   ///< bytes grouped by significance, then zstd level 1
};
constexpr int kNumCodecs = 5;

const char* codec_name(Codec c);
/// The codec for a wire id; false for an id this version does not know.
bool codec_from_wire(uint8_t id, Codec& out);
inline bool is_lossy(Codec c) {
  return c == Codec::fp16 || c == Codec::bf16;
}
/// Whether `c` encodes payloads of `dtype` (the lossy codecs: float32 and float64 only; the
/// lossless ones: every type).
bool applies_to(Codec c, DataType dtype);
/// Wire bytes per element of a lossy codec (2).
constexpr size_t kHalfBytes = 2;

}  // namespace hcomm::compression
