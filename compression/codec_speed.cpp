#include "compression/codec_speed.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "compression/delta_codec.hpp"
#include "compression/half_codec.hpp"
#include "compression/zstd_codec.hpp"

namespace hcomm::compression {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

/// The best of a few runs of `f`, in microseconds.
template <class F>
double best_us(F&& f) {
  double best = 1e300;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, us_since(t0));
  }
  return std::max(best, 1e-3);
}

struct Table {
  CodecSpeed speed[kNumCodecs];

  Table() {
    constexpr size_t kCount = 256 * 1024;
    constexpr size_t kBytes = kCount * sizeof(float);
    std::vector<float> data(kCount), back(kCount), base(kCount);
    uint32_t x = 12345;
    for (size_t i = 0; i < kCount; ++i) {
      x = x * 1664525u + 1013904223u;
      const float v = (static_cast<float>(x >> 8) / 16777216.0f - 0.5f) * 1e-2f;
      data[i] = (x & 0xf) < 2 ? 0.0f : v;
      base[i] = (x >> 4 & 0xf) < 2 ? v * 0.5f : data[i];  // an eighth changed against the base
    }
    speed[static_cast<int>(Codec::none)] = {1e9, 1e9, 1};
    for (Codec c : {Codec::fp16, Codec::bf16}) {
      std::vector<uint16_t> wire(kCount);
      CodecSpeed& s = speed[static_cast<int>(c)];
      s.encode_bytes_per_us = kBytes / best_us([&] {
                                encode_half(c, data.data(), kCount, DataType::float32, wire.data());
                              });
      s.decode_bytes_per_us = kBytes / best_us([&] {
                                decode_half(c, wire.data(), kCount, DataType::float32, back.data());
                              });
      s.ratio = 0.5;
    }
    std::vector<std::byte> out;
    {
      CodecSpeed& s = speed[static_cast<int>(Codec::zstd)];
      s.encode_bytes_per_us = kBytes / best_us([&] {
                                out.clear();
                                zstd_encode(data.data(), kBytes, 4, out);
                              });
      s.ratio = out.empty() ? 1.0 : static_cast<double>(out.size()) / kBytes;
      if (out.empty()) zstd_encode(data.data(), kBytes, 1, out);
      s.decode_bytes_per_us = out.empty()
                                  ? s.encode_bytes_per_us
                                  : kBytes / best_us([&] {
                                      zstd_decode(out.data(), out.size(), 4, back.data(), kBytes);
                                    });
    }
    {
      CodecSpeed& s = speed[static_cast<int>(Codec::delta)];
      s.encode_bytes_per_us = kBytes / best_us([&] {
                                out.clear();
                                delta_encode(data.data(), base.data(), kBytes, 4, out);
                              });
      s.ratio = static_cast<double>(out.size()) / kBytes;
      s.decode_bytes_per_us =
          kBytes / best_us([&] {
            delta_decode(out.data(), out.size(), base.data(), 4, back.data(), kBytes);
          });
    }
  }
};

}  // namespace

const CodecSpeed& codec_speed(Codec c) {
  static const Table table;
  return table.speed[static_cast<int>(c)];
}

}  // namespace hcomm::compression
