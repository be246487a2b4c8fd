// The protocol registry: order, unique names, errors that say what is registered, caps. The
// registry is process-wide, so every name here is unique to this file.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/log.hpp"
#include "hcomm/protocol.hpp"
#include "transport/protocol_registry.hpp"

namespace {

class FakeProtocol final : public hcomm::Protocol {
 public:
  explicit FakeProtocol(size_t max_message) : max_message_(max_message) {}
  hcomm::ProtocolCaps caps() const override {
    hcomm::ProtocolCaps c;
    c.max_message_bytes = max_message_;
    c.same_host_only = true;
    return c;
  }
  hcomm::Expected<std::string> open(const hcomm::ProtocolContext&) override {
    return std::string("fake");
  }
  bool reaches(int, const std::string&, const std::string&) const override { return true; }
  hcomm::Expected<std::unique_ptr<hcomm::Connection>> connect(
      int, const std::string&, std::chrono::steady_clock::time_point) override {
    return hcomm::Status{hcomm::HCOMM_ERR_TRANSPORT, "fake"};
  }

 private:
  size_t max_message_;
};

hcomm::ProtocolFactory fake(size_t max_message) {
  return [max_message] { return std::make_unique<FakeProtocol>(max_message); };
}

long position(const std::vector<std::string>& names, const std::string& name) {
  auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : it - names.begin();
}

}  // namespace

TEST_CASE("protocol registry: most preferred first, ties by name") {
  REQUIRE(hcomm::register_protocol("regtest-low", fake(4096), -1000));
  REQUIRE(hcomm::register_protocol("regtest-tie-b", fake(4096), 555));
  REQUIRE(hcomm::register_protocol("regtest-high", fake(4096), 100000));
  REQUIRE(hcomm::register_protocol("regtest-tie-a", fake(4096), 555));
  const auto names = hcomm::registered_protocols();
  CHECK(position(names, "regtest-high") == 0);
  CHECK(position(names, "regtest-low") == static_cast<long>(names.size()) - 1);
  CHECK(position(names, "regtest-tie-a") + 1 == position(names, "regtest-tie-b"));
  const auto entries = hcomm::transport::registered();
  REQUIRE(entries.size() == names.size());
  for (size_t i = 1; i < entries.size(); ++i)
    CHECK(entries[i - 1].preference >= entries[i].preference);
}

TEST_CASE("protocol registry: a taken name is refused and the first registration kept") {
  REQUIRE(hcomm::register_protocol("regtest-dup", fake(8192), 7));
  CHECK_FALSE(hcomm::register_protocol("regtest-dup", fake(65536), 9));
  CHECK_FALSE(hcomm::register_protocol("", fake(4096)));
  CHECK_FALSE(hcomm::register_protocol("regtest-null", nullptr));
  auto caps = hcomm::protocol_caps("regtest-dup");
  REQUIRE(caps.ok());
  CHECK(caps->max_message_bytes == 8192);
  CHECK(caps->same_host_only);
  CHECK(position(hcomm::registered_protocols(), "regtest-null") == -1);
}

TEST_CASE("protocol registry: an unknown name is an error that lists what is registered") {
  REQUIRE(hcomm::register_protocol("regtest-known", fake(4096)));
  auto made = hcomm::transport::make_protocol("regtest-unknown");
  CHECK(made.status().code() == hcomm::HCOMM_ERR_INVALID_ARG);
  CHECK(made.status().message().find("regtest-unknown") != std::string::npos);
  CHECK(made.status().message().find("regtest-known") != std::string::npos);
  CHECK(hcomm::protocol_caps("regtest-unknown").status().code() == hcomm::HCOMM_ERR_INVALID_ARG);
  auto known = hcomm::transport::make_protocol("regtest-known");
  REQUIRE(known.ok());
  CHECK(known.value() != nullptr);
}

TEST_CASE("protocol registry: a factory that makes nothing is an error, not a crash") {
  REQUIRE(
      hcomm::register_protocol("regtest-empty", [] { return std::unique_ptr<hcomm::Protocol>(); }));
  CHECK(hcomm::transport::make_protocol("regtest-empty").status().code() ==
        hcomm::HCOMM_ERR_INVALID_ARG);
}

TEST_CASE("protocol registry: concurrent registration keeps every name once") {
  // Each refused name logs a warning: hundreds here, none of them news.
  const char* was = std::getenv("HCOMM_DEBUG");
  const std::string saved = was != nullptr ? was : "";
  setenv("HCOMM_DEBUG", "ERROR", 1);
  hcomm::core::log::reload_from_env();
  std::vector<std::thread> threads;
  std::vector<int> accepted(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t, &accepted] {
      for (int i = 0; i < 50; ++i)
        accepted[t] += hcomm::register_protocol("regtest-race-" + std::to_string(i), fake(4096));
    });
  for (auto& th : threads) th.join();
  if (was != nullptr)
    setenv("HCOMM_DEBUG", saved.c_str(), 1);
  else
    unsetenv("HCOMM_DEBUG");
  hcomm::core::log::reload_from_env();
  int total = 0;
  for (int a : accepted) total += a;
  CHECK(total == 50);
  const auto names = hcomm::registered_protocols();
  for (int i = 0; i < 50; ++i)
    CHECK(std::count(names.begin(), names.end(), "regtest-race-" + std::to_string(i)) == 1);
}
