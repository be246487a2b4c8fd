#include "compression/zstd_codec.hpp"

#include <zstd.h>

#include <memory>
#include <string>

#include "compression/byte_group.hpp"

namespace hcomm::compression {
namespace {

struct Contexts {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_DCtx* d = ZSTD_createDCtx();
  std::vector<std::byte> scratch[2];
  Contexts() { ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1); }
  ~Contexts() {
    ZSTD_freeCCtx(c);
    ZSTD_freeDCtx(d);
  }
};

Contexts& contexts() {
  thread_local Contexts ctx;
  return ctx;
}

Status corrupt(const std::string& what) {
  return {HCOMM_ERR_TRANSPORT, "a compressed payload could not be decoded (" + what +
                                   "): the frame was damaged or the peers run different hcomm "
                                   "versions"};
}

}  // namespace

namespace internal {

std::byte* scratch(size_t bytes, int which) {
  auto& v = contexts().scratch[which];
  if (v.size() < bytes) v.resize(bytes);
  return v.data();
}

bool zstd_append(const void* src, size_t bytes, size_t limit, std::vector<std::byte>& out) {
  const size_t start = out.size();
  const size_t room = ZSTD_compressBound(bytes);
  out.resize(start + room);
  const size_t n = ZSTD_compress2(contexts().c, out.data() + start, room, src, bytes);
  if (ZSTD_isError(n) || n >= limit) {
    out.resize(start);
    return false;
  }
  out.resize(start + n);
  return true;
}

Status zstd_expand(const void* in, size_t in_bytes, void* out, size_t bytes) {
  const unsigned long long size = ZSTD_getFrameContentSize(in, in_bytes);
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
    return corrupt("no zstd frame");
  if (size != bytes)
    return corrupt("holds " + std::to_string(size) + " bytes where " + std::to_string(bytes) +
                   " were expected");
  const size_t n = ZSTD_decompressDCtx(contexts().d, out, bytes, in, in_bytes);
  if (ZSTD_isError(n)) return corrupt(ZSTD_getErrorName(n));
  if (n != bytes) return corrupt("short");
  return {};
}

}  // namespace internal

bool zstd_encode(const void* src, size_t bytes, size_t esize, std::vector<std::byte>& out) {
  if (esize <= 1) return internal::zstd_append(src, bytes, bytes, out);
  std::byte* grouped = internal::scratch(bytes, 0);
  group_bytes(src, bytes, esize, grouped);
  return internal::zstd_append(grouped, bytes, bytes, out);
}

Status zstd_decode(const void* in, size_t in_bytes, size_t esize, void* out, size_t bytes) {
  if (esize <= 1) return internal::zstd_expand(in, in_bytes, out, bytes);
  std::byte* grouped = internal::scratch(bytes, 0);
  Status st = internal::zstd_expand(in, in_bytes, grouped, bytes);
  if (st.ok()) ungroup_bytes(grouped, bytes, esize, out);
  return st;
}

}  // namespace hcomm::compression
