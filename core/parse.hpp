// The one parser of each small grammar that configuration (HCOMM_* variables) and the tools'
// options share: whole numbers, real numbers, byte counts and durations. Each returns nothing for
// text it does not accept whole (junk, a sign where none is allowed, overflow); the caller names
// the variable or option and what it expects in its error message.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hcomm::core {

/// `s` without the white space around it.
std::string_view trim(std::string_view s);
/// Whether `a` and `b` are equal but for the case of ASCII letters.
bool equals_ignoring_case(std::string_view a, std::string_view b);

/// The items of a list separated by `separator` ("eth1,eth2"), each trimmed, empty ones left out.
std::vector<std::string> split_list(std::string_view text, char separator = ',');

/// A decimal whole number with an optional sign: "42", "-1". Spaces around it are allowed.
std::optional<int64_t> parse_integer(std::string_view text);

/// A finite decimal real number: "8", "0.5", "2.5e3". Spaces around it are allowed.
std::optional<double> parse_real(std::string_view text);

/// A byte count: digits, then optionally K, M or G (powers of 1024, either case), then optionally
/// "B" or, after a suffix, "iB": "4096", "64K", "64KiB", "4M", "1G", "512B". Spaces around it
/// are allowed; a space between number and suffix is too ("64 KiB").
std::optional<uint64_t> parse_bytes(std::string_view text);

/// A duration: a non-negative real number and a unit, "us", "ms", "s" or "m" (minutes): "100ms",
/// "2.5s", "250us". A number without a unit is in `bare_unit` ("3" with seconds: 3 s).
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text,
                                                       std::chrono::nanoseconds bare_unit);

/// "64 KiB", "1.5 MiB", "512 B": a byte count for people (whole units when exact).
std::string format_bytes(uint64_t bytes);

}  // namespace hcomm::core
