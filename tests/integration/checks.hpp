// The pass/fail count of an integration program: check() counts a result and prints what failed;
// the program reports `passed` and `failed` at the end and exits non-zero on a failure.
#pragma once

#include <cstdio>
#include <string>

namespace checks {

inline int passed = 0, failed = 0;

inline void check(bool ok, const std::string& what) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    std::fprintf(stderr, "FAILED %s\n", what.c_str());
  }
}

}  // namespace checks
