// The unit tests' main: doctest, plus what facility.hpp promises. ctest runs every case as its
// own process (doctest_discover_tests in tests/CMakeLists.txt); this main decides its exit code:
//   1   a case failed, a case passed without a single assertion, or no case matched the filter
//   77  every case that ran was skipped (require_facility): ctest's SKIP_RETURN_CODE
//   0   otherwise (cases that skipped among others that passed are listed at the end)
// Queries (--list-test-cases, --help, ...) exit with doctest's code.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "tests/unit/facility.hpp"

namespace {

struct Tally {
  std::mutex mutex;
  std::string current;  // the case running now
  bool current_skipped = false;
  unsigned ran = 0;
  std::vector<std::string> skipped, empty;
};

Tally& tally() {
  static Tally t;
  return t;
}

/// Watches every case: which ran, which skipped, which ended without an assertion.
class FacilityListener : public doctest::IReporter {
 public:
  explicit FacilityListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    std::lock_guard<std::mutex> lock(tally().mutex);
    tally().current = tc.m_name;
    tally().current_skipped = false;
    ++tally().ran;
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& st) override {
    Tally& t = tally();
    std::lock_guard<std::mutex> lock(t.mutex);
    if (t.current_skipped)
      t.skipped.push_back(t.current);
    else if (st.numAssertsCurrentTest == 0 && st.testCaseSuccess)
      t.empty.push_back(t.current);
    t.current.clear();
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("facility", 1, FacilityListener);

}  // namespace

namespace hcomm_test {

bool running_under_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0';
}

bool pretend_missing(const std::string& name) {
  const char* list = std::getenv("HCOMM_TEST_WITHOUT");
  if (list == nullptr) return false;
  const std::string padded = "," + std::string(list) + ",";
  return padded.find("," + name + ",") != std::string::npos;
}

bool require_facility(const std::string& name, bool available, const std::string& how_to_get) {
  if (available && !pretend_missing(name)) return true;
  if (running_under_ci()) {
    FAIL_CHECK("CI is set, so this is a failure, not a skip: "
               << name << " is unavailable; to run this case: " << how_to_get);
    return false;
  }
  Tally& t = tally();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.current_skipped = true;
  std::cout << "SKIPPED: " << t.current << ": " << name
            << " is unavailable; to run this case: " << how_to_get << std::endl;
  return false;
}

}  // namespace hcomm_test

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;

  Tally& t = tally();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (const std::string& name : t.empty)
    std::cout << "FAILED: " << name << ": passed without a single assertion (it checks nothing)"
              << std::endl;
  if (t.ran == 0) {
    std::cout << "FAILED: no test case matched the filter" << std::endl;
    return 1;
  }
  if (rc != 0) return rc;
  if (!t.empty.empty()) return 1;
  if (!t.skipped.empty()) {
    std::cout << t.skipped.size() << " of " << t.ran << " test case(s) SKIPPED:" << std::endl;
    for (const std::string& name : t.skipped) std::cout << "  " << name << std::endl;
    if (t.skipped.size() == t.ran) return 77;
  }
  return 0;
}
