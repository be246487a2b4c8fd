// Which codec a frame travels with: the operation's compression mode, the frame's size and type,
// and for `auto` the price of the codec against the link.
//
// `auto` considers the lossless zstd codec only (it never changes a result) and never on a peer
// of the same host (shared memory, loopback). Elsewhere it compresses a frame when
//     bytes / encode_speed + ratio * bytes / link_speed + bytes / decode_speed
//   < 0.9 * bytes / link_speed,
// with the codec's speeds measured on this CPU (compression/codec_speed), the link's speed from
// the communicator's calibration, and `ratio` the running average of what this peer's frames
// compressed to (one frame in 32 is still compressed while the average says no, to follow data
// that changes).
//
// Thread safety: set up once at creation; choose(), explain() and the setters may be called
// from any thread (the running averages are atomics).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "compression/codec.hpp"
#include "hcomm/communicator.hpp"
#include "hcomm/config.hpp"
#include "hcomm/types.hpp"

namespace hcomm::collectives {

class CompressionPolicy {
 public:
  /// `same_host[r]`: rank r shares this rank's host.
  CompressionPolicy(std::vector<bool> same_host, size_t threshold, bool error_feedback);

  /// The communicator's links between hosts move this many bytes per microsecond (calibration).
  void set_link_speed(double bytes_per_us);
  /// The codec for a frame of `bytes` of `dtype` elements to `peer` under `mode`.
  compression::Codec choose(Compression mode, DataType dtype, int peer, size_t bytes);
  /// The same choice, and why, for people: "zstd: link 118 B/us, codec 410 B/us, ratio 0.21".
  std::string explain(Compression mode, DataType dtype, int peer, size_t bytes) const;
  /// An `auto` frame to `peer` went out as `wire` bytes of `raw`.
  void observe(int peer, size_t raw, size_t wire);

  /// A data frame of `raw` payload bytes went out as `wire` bytes.
  void count(size_t raw, size_t wire) {
    frames_.fetch_add(1, std::memory_order_relaxed);
    if (wire != raw) compressed_.fetch_add(1, std::memory_order_relaxed);
    raw_.fetch_add(raw, std::memory_order_relaxed);
    wire_.fetch_add(wire, std::memory_order_relaxed);
  }
  CompressionStats stats() const {
    return {frames_.load(std::memory_order_relaxed), compressed_.load(std::memory_order_relaxed),
            raw_.load(std::memory_order_relaxed), wire_.load(std::memory_order_relaxed)};
  }

  size_t threshold() const { return threshold_; }
  bool error_feedback() const { return error_feedback_; }

 private:
  struct Peer {
    bool same_host = false;
    std::atomic<double> ratio{0.5};
    std::atomic<unsigned> declined{0};
    std::atomic<int> last{-1};  // auto's last choice: 1 compressed, 0 not, -1 none yet
  };
  compression::Codec decide(Compression mode, DataType dtype, int peer, size_t bytes,
                            std::string* why) const;

  std::unique_ptr<Peer[]> peers_;
  size_t num_peers_;
  size_t threshold_;
  bool error_feedback_;
  std::atomic<double> link_bytes_per_us_{2500.0};
  std::atomic<uint64_t> frames_{0}, compressed_{0}, raw_{0}, wire_{0};
};

/// The codec a mode asks for outright (none for `auto`).
compression::Codec forced_codec(Compression mode);

}  // namespace hcomm::collectives
