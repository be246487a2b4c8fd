#include "collectives/compression_policy.hpp"

#include <cstdio>

#include "compression/codec_speed.hpp"
#include "core/log.hpp"

namespace hcomm::collectives {

using compression::Codec;

compression::Codec forced_codec(Compression mode) {
  switch (mode) {
    case Compression::fp16:
      return Codec::fp16;
    case Compression::bf16:
      return Codec::bf16;
    case Compression::delta:
      return Codec::delta;
    case Compression::zstd:
      return Codec::zstd;
    default:
      return Codec::none;
  }
}

CompressionPolicy::CompressionPolicy(std::vector<bool> same_host, size_t threshold,
                                     bool error_feedback)
    : peers_(new Peer[same_host.size()]),
      num_peers_(same_host.size()),
      threshold_(threshold),
      error_feedback_(error_feedback) {
  for (size_t i = 0; i < num_peers_; ++i) peers_[i].same_host = same_host[i];
}

void CompressionPolicy::set_link_speed(double bytes_per_us) {
  if (bytes_per_us > 0) link_bytes_per_us_.store(bytes_per_us, std::memory_order_relaxed);
}

Codec CompressionPolicy::decide(Compression mode, DataType dtype, int peer, size_t bytes,
                                std::string* why) const {
  auto say = [&](const std::string& text) {
    if (why != nullptr) *why = text;
  };
  if (mode == Compression::none) return say("none: compression is off"), Codec::none;
  if (bytes < threshold_ || bytes == 0) {
    say("none: " + std::to_string(bytes) + " bytes is below the threshold of " +
        std::to_string(threshold_) + " (HCOMM_COMP_THRESHOLD)");
    return Codec::none;
  }
  if (mode != Compression::automatic) {
    const Codec c = forced_codec(mode);
    if (!compression::applies_to(c, dtype)) {
      say(std::string("none: ") + compression::codec_name(c) + " does not apply to " +
          dtype_name(dtype) + " payloads");
      return Codec::none;
    }
    if (compression::is_lossy(c) && peer >= 0 && static_cast<size_t>(peer) < num_peers_ &&
        peers_[static_cast<size_t>(peer)].same_host) {
      say(std::string("none: ") + compression::codec_name(c) +
          " frames go between hosts only; within a host values are rounded alike but travel "
          "raw");
      return Codec::none;
    }
    say(std::string(compression::codec_name(c)) + ": forced (HCOMM_COMPRESSION=" + to_string(mode) +
        ")");
    return c;
  }
  if (peer < 0 || static_cast<size_t>(peer) >= num_peers_)
    return say("none: no such peer"), Codec::none;
  const Peer& p = peers_[static_cast<size_t>(peer)];
  if (p.same_host) return say("none: auto never compresses within a host"), Codec::none;
  const auto& speed = compression::codec_speed(Codec::zstd);
  const double link = link_bytes_per_us_.load(std::memory_order_relaxed);
  const double ratio = p.ratio.load(std::memory_order_relaxed);
  const double raw_us = 1.0 / link;
  const double zstd_us =
      1.0 / speed.encode_bytes_per_us + ratio / link + 1.0 / speed.decode_bytes_per_us;
  char text[200];
  std::snprintf(text, sizeof text,
                "link %.0f B/us, zstd %.0f B/us encode and %.0f decode, ratio %.2f: %.4f us/B "
                "against %.4f raw",
                link, speed.encode_bytes_per_us, speed.decode_bytes_per_us, ratio, zstd_us, raw_us);
  const bool pays = zstd_us < 0.9 * raw_us;
  say(std::string(pays ? "zstd: pays (" : "none: does not pay (") + text + ")");
  return pays ? Codec::zstd : Codec::none;
}

Codec CompressionPolicy::choose(Compression mode, DataType dtype, int peer, size_t bytes) {
  const Codec c = decide(mode, dtype, peer, bytes, nullptr);
  if (mode != Compression::automatic || peer < 0 || static_cast<size_t>(peer) >= num_peers_)
    return c;
  Peer& p = peers_[static_cast<size_t>(peer)];
  // The DEBUG log says when auto's choice for a peer changes, and why.
  const int now = c == Codec::none ? 0 : 1;
  if (bytes >= threshold_ && p.last.exchange(now, std::memory_order_relaxed) != now)
    HCOMM_LOG(debug, core::log::kColl, "auto compression to rank %d, %zu-byte frames: %s", peer,
              bytes, explain(mode, dtype, peer, bytes).c_str());
  if (c != Codec::none) return c;
  // Declined on the ratio alone (the link is slow enough): probe now and then.
  if (p.same_host || bytes < threshold_) return c;
  const double link = link_bytes_per_us_.load(std::memory_order_relaxed);
  const auto& speed = compression::codec_speed(Codec::zstd);
  const double best_us = 1.0 / speed.encode_bytes_per_us + 1.0 / speed.decode_bytes_per_us;
  if (best_us >= 0.9 / link) return c;  // even a perfect ratio would not pay
  return p.declined.fetch_add(1, std::memory_order_relaxed) % 32 == 31 ? Codec::zstd : c;
}

std::string CompressionPolicy::explain(Compression mode, DataType dtype, int peer,
                                       size_t bytes) const {
  std::string why;
  decide(mode, dtype, peer, bytes, &why);
  return why;
}

void CompressionPolicy::observe(int peer, size_t raw, size_t wire) {
  if (peer < 0 || static_cast<size_t>(peer) >= num_peers_ || raw == 0) return;
  Peer& p = peers_[static_cast<size_t>(peer)];
  const double r = static_cast<double>(wire) / static_cast<double>(raw);
  const double old = p.ratio.load(std::memory_order_relaxed);
  p.ratio.store(0.75 * old + 0.25 * (r > 1 ? 1 : r), std::memory_order_relaxed);
}

}  // namespace hcomm::collectives
