// "64M" -> 67108864: the byte counts the tools' options take (K, M, G suffixes, x1024 each, as
// nccl-tests). Rejects signs, junk and overflow rather than guessing.
#pragma once

#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

namespace hcomm::tools {

inline std::optional<size_t> parse_byte_count(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  static const char kSuffixes[] = "KMG";
  const char* suffix = *end == '\0'
                           ? nullptr
                           : std::strchr(kSuffixes, std::toupper(static_cast<unsigned char>(*end)));
  const unsigned shift = suffix == nullptr ? 0 : 10 * static_cast<unsigned>(suffix - kSuffixes + 1);
  if (suffix != nullptr) ++end;
  if (errno != 0 || *end != '\0' || v > (std::numeric_limits<size_t>::max() >> shift))
    return std::nullopt;
  return static_cast<size_t>(v) << shift;
}

}  // namespace hcomm::tools
