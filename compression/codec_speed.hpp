// What each codec costs on this CPU: encode and decode throughput, measured once per process
// (about 10 ms, at the first call, on a 1 MiB float32 payload shaped like a gradient: mostly
// small values, a tenth zeros). The `auto` compression policy prices codecs with it.
#pragma once

#include "compression/codec.hpp"

namespace hcomm::compression {

struct CodecSpeed {
  double encode_bytes_per_us = 0;  ///< input bytes per microsecond
  double decode_bytes_per_us = 0;  ///< output bytes per microsecond
  double ratio = 1;                ///< wire bytes / input bytes on the measured payload
};

/// Thread-safe; the first call measures every codec.
const CodecSpeed& codec_speed(Codec c);

}  // namespace hcomm::compression
