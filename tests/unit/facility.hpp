// The unit tests' one way to say that something a case needs is missing (userfaultfd, a CPU
// feature, ...): the case calls
//
//   if (!hcomm_test::require_facility("userfaultfd", available, "how to get it")) return;
//
// first. Where the facility is missing it prints
//   SKIPPED: <case>: <name> is unavailable; to run this case: <how_to_get>
// and the case counts as skipped: a run of the binary in which every case that ran was skipped
// exits 77, which ctest reports as "Skipped" (SKIP_RETURN_CODE 77 on every discovered case).
// When the environment variable CI is set (non-empty) the case fails instead: CI has every
// facility, so a skip there means something broke.
//
// HCOMM_TEST_WITHOUT, a comma-separated list of facility names ("userfaultfd,F16C"), makes
// require_facility treat those as missing: to see a case's skip, and its failure under CI, on a
// machine that has the facility (tests/skip.sh honours the same variable).
//
// The harness (main.cpp) also fails every case that ends without a single assertion and is not
// skipped, and a run in which no case matched the filter: no test passes by checking nothing.
#pragma once

#include <string>

namespace hcomm_test {

/// True when `available`; otherwise reports the skip (or, under CI, a failure) and returns
/// false: the caller returns from the case at once. `name`: what is missing, with the reason
/// when one is known; `how_to_get`: what would make it available.
bool require_facility(const std::string& name, bool available, const std::string& how_to_get);

/// Whether the environment variable CI is set and not empty.
bool running_under_ci();

/// Whether HCOMM_TEST_WITHOUT names `name`.
bool pretend_missing(const std::string& name);

}  // namespace hcomm_test
