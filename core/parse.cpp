#include "core/parse.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace hcomm::core {
namespace {

/// Leading decimal digits of `s` as an unsigned number; `used` gets how many characters.
std::optional<uint64_t> leading_digits(std::string_view s, size_t* used) {
  uint64_t n = 0;
  size_t i = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    const auto d = static_cast<uint64_t>(s[i] - '0');
    if (n > (UINT64_MAX - d) / 10) return std::nullopt;
    n = n * 10 + d;
  }
  if (i == 0) return std::nullopt;
  *used = i;
  return n;
}

/// A real number at the front of `s` (strtod's grammar without hex, inf and nan).
std::optional<double> leading_real(std::string_view s, size_t* used) {
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.' || s[0] == '-' ||
                     s[0] == '+'))
    return std::nullopt;
  // Up to the first character a decimal number cannot hold: strtod would take "0x10" as hex.
  const std::string copy(s.substr(0, s.find_first_not_of("0123456789.+-eE")));
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(copy.c_str(), &end);
  if (end == copy.c_str() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  *used = static_cast<size_t>(end - copy.c_str());
  return v;
}

}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_list(std::string_view text, char separator) {
  std::vector<std::string> items;
  while (true) {
    const size_t end = text.find(separator);
    const std::string_view item = trim(text.substr(0, end));
    if (!item.empty()) items.emplace_back(item);
    if (end == std::string_view::npos) return items;
    text.remove_prefix(end + 1);
  }
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::optional<int64_t> parse_integer(std::string_view text) {
  std::string_view s = trim(text);
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  size_t used = 0;
  auto n = leading_digits(s, &used);
  if (!n || used != s.size()) return std::nullopt;
  if (negative) {
    if (*n > static_cast<uint64_t>(INT64_MAX) + 1) return std::nullopt;
    return static_cast<int64_t>(0 - *n);
  }
  if (*n > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(*n);
}

std::optional<double> parse_real(std::string_view text) {
  const std::string_view s = trim(text);
  size_t used = 0;
  auto v = leading_real(s, &used);
  if (!v || used != s.size()) return std::nullopt;
  return v;
}

std::optional<uint64_t> parse_bytes(std::string_view text) {
  std::string_view s = trim(text);
  size_t used = 0;
  auto n = leading_digits(s, &used);
  if (!n) return std::nullopt;
  const std::string_view suffix = trim(s.substr(used));
  int shift = 0;
  if (!suffix.empty()) {
    switch (std::toupper(static_cast<unsigned char>(suffix[0]))) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      default:
        break;
    }
    const std::string_view rest = shift == 0 ? suffix : suffix.substr(1);
    if (!(rest.empty() || equals_ignoring_case(rest, "B") ||
          (shift != 0 && equals_ignoring_case(rest, "iB"))))
      return std::nullopt;
  }
  if (shift != 0 && *n > (UINT64_MAX >> shift)) return std::nullopt;
  return *n << shift;
}

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text,
                                                       std::chrono::nanoseconds bare_unit) {
  const std::string_view s = trim(text);
  size_t used = 0;
  auto v = leading_real(s, &used);
  if (!v || *v < 0 || s[0] == '-' || s[0] == '+') return std::nullopt;
  const std::string_view unit = trim(s.substr(used));
  double ns_per_unit = static_cast<double>(bare_unit.count());
  if (unit == "us")
    ns_per_unit = 1e3;
  else if (unit == "ms")
    ns_per_unit = 1e6;
  else if (unit == "s")
    ns_per_unit = 1e9;
  else if (unit == "m")
    ns_per_unit = 60e9;
  else if (!unit.empty())
    return std::nullopt;
  const double ns = *v * ns_per_unit;
  if (ns > 9.2e18) return std::nullopt;
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(ns)));
}

std::string format_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0 || v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

}  // namespace hcomm::core
