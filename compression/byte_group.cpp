#include "compression/byte_group.hpp"

#include <cstdint>
#include <cstring>

namespace hcomm::compression {
namespace {

// Fixed element sizes let the compiler unroll the inner loop.
template <size_t E>
void group_fixed(const uint8_t* s, size_t n, uint8_t* o) {
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < E; ++k) o[k * n + i] = s[i * E + k];
}

template <size_t E>
void ungroup_fixed(const uint8_t* s, size_t n, uint8_t* o) {
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < E; ++k) o[i * E + k] = s[k * n + i];
}

}  // namespace

void group_bytes(const void* src, size_t bytes, size_t esize, void* out) {
  const auto* s = static_cast<const uint8_t*>(src);
  auto* o = static_cast<uint8_t*>(out);
  if (esize <= 1) {
    std::memcpy(o, s, bytes);
    return;
  }
  const size_t n = bytes / esize;
  switch (esize) {
    case 2:
      group_fixed<2>(s, n, o);
      break;
    case 4:
      group_fixed<4>(s, n, o);
      break;
    case 8:
      group_fixed<8>(s, n, o);
      break;
    default:
      for (size_t i = 0; i < n; ++i)
        for (size_t k = 0; k < esize; ++k) o[k * n + i] = s[i * esize + k];
  }
  std::memcpy(o + n * esize, s + n * esize, bytes - n * esize);
}

void ungroup_bytes(const void* src, size_t bytes, size_t esize, void* out) {
  const auto* s = static_cast<const uint8_t*>(src);
  auto* o = static_cast<uint8_t*>(out);
  if (esize <= 1) {
    std::memcpy(o, s, bytes);
    return;
  }
  const size_t n = bytes / esize;
  switch (esize) {
    case 2:
      ungroup_fixed<2>(s, n, o);
      break;
    case 4:
      ungroup_fixed<4>(s, n, o);
      break;
    case 8:
      ungroup_fixed<8>(s, n, o);
      break;
    default:
      for (size_t i = 0; i < n; ++i)
        for (size_t k = 0; k < esize; ++k) o[i * esize + k] = s[k * n + i];
  }
  std::memcpy(o + n * esize, s + n * esize, bytes - n * esize);
}

}  // namespace hcomm::compression
