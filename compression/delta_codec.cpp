#include "compression/delta_codec.hpp"

#include <cstdint>
#include <cstring>

#include "compression/byte_group.hpp"
#include "compression/zstd_codec.hpp"

namespace hcomm::compression {
namespace {

enum Mode : uint8_t { kMap = 0, kRaw = 1 };
enum Flags : uint8_t { kMapRaw = 1, kValuesRaw = 2 };

struct Header {
  uint8_t mode = kMap;
  uint8_t flags = 0;
  uint16_t reserved = 0;
  uint32_t map_bytes = 0;     // as stored (compressed unless kMapRaw)
  uint64_t values_bytes = 0;  // as stored (compressed unless kValuesRaw)
};
static_assert(sizeof(Header) == 16, "");

size_t width_of(size_t esize) {
  return esize < 4 ? 4 : esize;
}

Status bad(const char* what) {
  return {HCOMM_ERR_TRANSPORT, std::string("a delta payload could not be decoded (") + what +
                                   "): the frame was damaged or the peers run different hcomm "
                                   "versions"};
}

/// Appends `bytes` of `src` compressed, or as they are when that does not shrink them; true
/// when stored raw.
bool append_part(const void* src, size_t bytes, std::vector<std::byte>& out) {
  if (bytes > 0 && internal::zstd_append(src, bytes, bytes, out)) return false;
  const size_t at = out.size();
  out.resize(at + bytes);
  if (bytes > 0) std::memcpy(out.data() + at, src, bytes);
  return true;
}

Status read_part(const std::byte* in, size_t stored, bool raw, void* out, size_t bytes) {
  if (raw) {
    if (stored != bytes) return bad("part of the wrong size");
    if (bytes > 0) std::memcpy(out, in, bytes);
    return {};
  }
  return internal::zstd_expand(in, stored, out, bytes);
}

}  // namespace

bool delta_encode(const void* src, const void* base, size_t bytes, size_t esize,
                  std::vector<std::byte>& out) {
  const auto* s = static_cast<const uint8_t*>(src);
  const auto* b = static_cast<const uint8_t*>(base);
  const size_t w = width_of(esize);
  const size_t n = (bytes + w - 1) / w;
  const size_t map_len = (n + 7) / 8;
  auto* map = reinterpret_cast<uint8_t*>(internal::scratch(map_len + bytes, 1));
  uint8_t* values = map + map_len;
  std::memset(map, 0, map_len);
  size_t vbytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t at = i * w;
    const size_t len = bytes - at < w ? bytes - at : w;
    bool changed = false;
    if (b == nullptr) {
      for (size_t k = 0; k < len; ++k) changed |= s[at + k] != 0;
    } else {
      changed = std::memcmp(s + at, b + at, len) != 0;
    }
    if (!changed) continue;
    map[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
    for (size_t k = 0; k < len; ++k) values[vbytes + k] = s[at + k] ^ (b ? b[at + k] : 0);
    vbytes += len;
  }
  const size_t start = out.size();
  out.resize(start + sizeof(Header));
  Header h;
  const size_t map_at = out.size();
  if (append_part(map, map_len, out)) h.flags |= kMapRaw;
  h.map_bytes = static_cast<uint32_t>(out.size() - map_at);
  const size_t values_at = out.size();
  bool values_raw = true;
  if (vbytes > 0) {
    // The grouped XOR bytes go through zstd; the grouping buffer is scratch 0 (zstd_append does
    // not use it).
    std::byte* grouped = internal::scratch(vbytes, 0);
    group_bytes(values, vbytes, w, grouped);
    values_raw = append_part(grouped, vbytes, out);
  }
  if (values_raw) h.flags |= kValuesRaw;
  h.values_bytes = out.size() - values_at;
  if (out.size() - start >= bytes + sizeof(Header)) {
    out.resize(start);
    Header raw;
    raw.mode = kRaw;
    raw.values_bytes = bytes;
    out.resize(start + sizeof raw + bytes);
    std::memcpy(out.data() + start, &raw, sizeof raw);
    std::memcpy(out.data() + start + sizeof raw, src, bytes);
    return false;
  }
  std::memcpy(out.data() + start, &h, sizeof h);
  return true;
}

Status delta_decode(const void* in, size_t in_bytes, const void* base, size_t esize, void* out,
                    size_t bytes) {
  const auto* p = static_cast<const std::byte*>(in);
  Header h;
  if (in_bytes < sizeof h) return bad("shorter than its header");
  std::memcpy(&h, p, sizeof h);
  p += sizeof h;
  const size_t body = in_bytes - sizeof h;
  auto* o = static_cast<uint8_t*>(out);
  if (h.mode == kRaw) {
    if (h.values_bytes != bytes || body != bytes) return bad("raw part of the wrong size");
    std::memmove(o, p, bytes);
    return {};
  }
  if (h.mode != kMap || h.flags > (kMapRaw | kValuesRaw)) return bad("unknown mode");
  if (h.map_bytes > body || h.values_bytes != body - h.map_bytes) return bad("bad part sizes");
  const size_t w = width_of(esize);
  const size_t n = (bytes + w - 1) / w;
  const size_t map_len = (n + 7) / 8;
  auto* map = reinterpret_cast<uint8_t*>(internal::scratch(map_len + bytes, 1));
  uint8_t* values = map + map_len;
  Status st = read_part(p, h.map_bytes, h.flags & kMapRaw, map, map_len);
  if (!st.ok()) return st;
  if (n % 8 != 0 && (map[map_len - 1] >> (n % 8)) != 0) return bad("map beyond the payload");
  size_t vbytes = 0;
  for (size_t i = 0; i < n; ++i)
    if (map[i / 8] & (1u << (i % 8))) vbytes += bytes - i * w < w ? bytes - i * w : w;
  if (vbytes > 0) {
    std::byte* grouped = internal::scratch(vbytes, 0);
    st = read_part(p + h.map_bytes, h.values_bytes, h.flags & kValuesRaw, grouped, vbytes);
    if (!st.ok()) return st;
    ungroup_bytes(grouped, vbytes, w, values);
  } else if (h.values_bytes != 0) {
    return bad("values without changes");
  }
  if (base == nullptr)
    std::memset(o, 0, bytes);
  else if (base != out)
    std::memcpy(o, base, bytes);
  size_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(map[i / 8] & (1u << (i % 8)))) continue;
    const size_t at = i * w;
    const size_t len = bytes - at < w ? bytes - at : w;
    for (size_t k = 0; k < len; ++k) o[at + k] ^= values[v + k];
    v += len;
  }
  return {};
}

}  // namespace hcomm::compression
