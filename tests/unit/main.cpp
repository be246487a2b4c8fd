// The unit tests' main: doctest, and a check doctest does not make. ctest runs every case as its
// own process (doctest_discover_tests in tests/CMakeLists.txt); this main decides its exit code:
//   1   a case failed, a case passed without a single assertion, or no case matched the filter
//   0   otherwise
// Queries (--list-test-cases, --help, ...) exit with doctest's code.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Tally {
  std::mutex mutex;
  std::string current;  // the case running now
  unsigned ran = 0;
  std::vector<std::string> empty;
};

Tally& tally() {
  static Tally t;
  return t;
}

/// Watches every case: which ran, which ended without an assertion.
class AssertionListener : public doctest::IReporter {
 public:
  explicit AssertionListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    std::lock_guard<std::mutex> lock(tally().mutex);
    tally().current = tc.m_name;
    ++tally().ran;
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& st) override {
    Tally& t = tally();
    std::lock_guard<std::mutex> lock(t.mutex);
    if (st.numAssertsCurrentTest == 0 && st.testCaseSuccess) t.empty.push_back(t.current);
    t.current.clear();
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("assertions", 1, AssertionListener);

}  // namespace

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
  return t.empty.empty() ? 0 : 1;
}
