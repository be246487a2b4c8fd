// core/parse: the grammars that HCOMM_* variables and the tools' options share. Each case says
// what is accepted whole and what is refused (junk, signs, overflow, suffix case, spaces).
#include "core/parse.hpp"

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <doctest/doctest.h>

namespace {

using hcomm::core::format_bytes;
using hcomm::core::parse_bytes;
using hcomm::core::parse_duration;
using hcomm::core::parse_integer;
using hcomm::core::parse_real;
using namespace std::chrono_literals;

constexpr std::chrono::nanoseconds kSecond = 1s;

}  // namespace

TEST_CASE("parse_integer: decimal whole numbers with an optional sign") {
  CHECK(parse_integer("0") == 0);
  CHECK(parse_integer("42") == 42);
  CHECK(parse_integer("-1") == -1);
  CHECK(parse_integer("+7") == 7);
  CHECK(parse_integer("007") == 7);
  CHECK(parse_integer("  42\t") == 42);  // spaces around it
  CHECK(parse_integer("9223372036854775807") == std::numeric_limits<int64_t>::max());
  CHECK(parse_integer("-9223372036854775808") == std::numeric_limits<int64_t>::min());
}

TEST_CASE("parse_integer: junk, lone signs, spaces inside and overflow are refused") {
  for (const char* bad :
       {"", " ", "-", "+", "--1", "+-1", "4 2", "- 4", "42x", "x42", "0x10", "1e3", "1.0", "1,000",
        "9223372036854775808", "-9223372036854775809", "99999999999999999999999"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_integer(bad).has_value());
  }
}

TEST_CASE("parse_real: finite decimal numbers") {
  CHECK(parse_real("8") == 8.0);
  CHECK(parse_real("0.5") == 0.5);
  CHECK(parse_real(".5") == 0.5);
  CHECK(parse_real("5.") == 5.0);
  CHECK(parse_real("-1.25") == -1.25);
  CHECK(parse_real("+3") == 3.0);
  CHECK(parse_real("2.5e3") == 2500.0);
  CHECK(parse_real("1E-2") == 0.01);
  CHECK(parse_real(" 8 ") == 8.0);
}

TEST_CASE("parse_real: hex, inf, nan, junk and out-of-range values are refused") {
  for (const char* bad : {"", " ", ".", "-", "e5", "1e", "1.2.3", "1-2", "8 8", "8x", "0x10", "inf",
                          "-inf", "infinity", "nan", "NaN", "1e999", "-1e999"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_real(bad).has_value());
  }
}

TEST_CASE("parse_bytes: digits, an optional K/M/G (x1024) in either case, an optional B/iB") {
  CHECK(parse_bytes("0") == 0u);
  CHECK(parse_bytes("4096") == 4096u);
  CHECK(parse_bytes("512B") == 512u);
  CHECK(parse_bytes("512b") == 512u);
  CHECK(parse_bytes("64K") == 64u << 10);
  CHECK(parse_bytes("64k") == 64u << 10);
  CHECK(parse_bytes("64KB") == 64u << 10);
  CHECK(parse_bytes("64KiB") == 64u << 10);
  CHECK(parse_bytes("64kib") == 64u << 10);
  CHECK(parse_bytes("4M") == 4u << 20);
  CHECK(parse_bytes("4MiB") == 4u << 20);
  CHECK(parse_bytes("1G") == 1u << 30);
  CHECK(parse_bytes("16GiB") == uint64_t{16} << 30);
  CHECK(parse_bytes(" 64 KiB ") == 64u << 10);  // spaces around, and between number and suffix
  CHECK(parse_bytes("18446744073709551615") == std::numeric_limits<uint64_t>::max());
  CHECK(parse_bytes("17179869183G") == uint64_t{17179869183} << 30);
}

TEST_CASE("parse_bytes: signs, fractions, unknown suffixes and overflow are refused") {
  for (const char* bad : {"",
                          " ",
                          "K",
                          "KiB",
                          "-1",
                          "+1",
                          "-64K",
                          "1.5K",
                          "0x10",
                          "64X",
                          "64T",
                          "64iB",
                          "64KiBs",
                          "64 K iB",
                          "64KK",
                          "64Ki",
                          "6 4K",
                          "18446744073709551616",
                          "17179869184G",
                          "18014398509481984M"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_bytes(bad).has_value());
  }
}

TEST_CASE("parse_duration: a non-negative number and us, ms, s or m, bare numbers in bare_unit") {
  CHECK(parse_duration("100ms", kSecond) == 100ms);
  CHECK(parse_duration("2.5s", kSecond) == 2500ms);
  CHECK(parse_duration("250us", kSecond) == 250us);
  CHECK(parse_duration("1m", kSecond) == 60s);
  CHECK(parse_duration("0", kSecond) == 0ns);
  CHECK(parse_duration("3", kSecond) == 3s);
  CHECK(parse_duration("3", std::chrono::milliseconds(1)) == 3ms);
  CHECK(parse_duration("1e3ms", kSecond) == 1s);
  CHECK(parse_duration(" 1 ms ", kSecond) == 1ms);  // spaces around, and before the unit
}

TEST_CASE("parse_duration: signs, unknown units, unit case and overflow are refused") {
  for (const char* bad : {"", " ", "ms", "-1s", "+1s", "-0", "1h", "1d", "1ns", "1MS", "1S",
                          "1 m s", "1sec", "inf", "nan", "1e10m", "1e300"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_duration(bad, kSecond).has_value());
  }
}

TEST_CASE("format_bytes: whole units when exact, one decimal otherwise") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1024) == "1 KiB");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(64u << 20) == "64 MiB");
  CHECK(format_bytes(uint64_t{3} << 30) == "3 GiB");
  CHECK(format_bytes(uint64_t{1} << 40) == "1 TiB");
  // What format_bytes writes, parse_bytes reads back (for the units both know).
  for (uint64_t b : {uint64_t{512}, uint64_t{1} << 10, uint64_t{64} << 20, uint64_t{2} << 30})
    CHECK(parse_bytes(format_bytes(b)) == b);
}
