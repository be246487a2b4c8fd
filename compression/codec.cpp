#include "compression/codec.hpp"

namespace hcomm::compression {

const char* codec_name(Codec c) {
  switch (c) {
    case Codec::none:
      return "none";
    case Codec::fp16:
      return "fp16";
    case Codec::bf16:
      return "bf16";
    case Codec::delta:
      return "delta";
    case Codec::zstd:
      return "zstd";
  }
  return "?";
}

bool codec_from_wire(uint8_t id, Codec& out) {
  if (id >= kNumCodecs) return false;
  out = static_cast<Codec>(id);
  return true;
}

bool applies_to(Codec c, DataType dtype) {
  if (is_lossy(c)) return dtype == DataType::float32 || dtype == DataType::float64;
  return true;
}

}  // namespace hcomm::compression
