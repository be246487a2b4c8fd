// The job-key handshake over an application protocol's Connections
// (transport/connection_auth): two ranks over an in-memory message pipe.
#include <deque>
#include <future>
#include <mutex>

#include "core/job_key.hpp"
#include "doctest/doctest.h"
#include "transport/connection_auth.hpp"

using hcomm::ConstBuffer;
using hcomm::Status;
using hcomm::core::JobKey;

namespace {

// One direction of a message pipe, shared by the two ends.
struct Queue {
  std::mutex mutex;
  std::deque<std::vector<std::byte>> messages;
};

// An in-memory Connection: sends into `out`, receives from `in`; `extra` is queued after the
// first message it sends (a peer that sends something else too early).
class PipeConnection final : public hcomm::Connection {
 public:
  PipeConnection(std::shared_ptr<Queue> in, std::shared_ptr<Queue> out)
      : in_(std::move(in)), out_(std::move(out)) {}
  Status send(const ConstBuffer* parts, size_t count) override {
    std::vector<std::byte> message;
    for (size_t i = 0; i < count; ++i) {
      const auto* p = static_cast<const std::byte*>(parts[i].data);
      message.insert(message.end(), p, p + parts[i].size);
    }
    std::lock_guard<std::mutex> lock(out_->mutex);
    out_->messages.push_back(std::move(message));
    return {};
  }
  hcomm::Expected<std::optional<std::vector<std::byte>>> receive() override {
    std::lock_guard<std::mutex> lock(in_->mutex);
    if (in_->messages.empty()) return std::optional<std::vector<std::byte>>();
    auto message = std::move(in_->messages.front());
    in_->messages.pop_front();
    return std::optional<std::vector<std::byte>>(std::move(message));
  }

 private:
  std::shared_ptr<Queue> in_, out_;
};

std::shared_ptr<const JobKey> key_of(const std::string& secret) {
  auto key = JobKey::from_secret(secret);
  REQUIRE(key.ok());
  return key.value();
}

// Ranks 0 and 1 authenticate over one pipe with their keys; both statuses.
std::pair<Status, Status> run_pair(const std::string& secret0, const std::string& secret1) {
  auto a = std::make_shared<Queue>(), b = std::make_shared<Queue>();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  auto side = [&](int rank, std::shared_ptr<const JobKey> key, std::shared_ptr<Queue> in,
                  std::shared_ptr<Queue> out) {
    std::map<int, std::unique_ptr<hcomm::Connection>> connections;
    connections[1 - rank] = std::make_unique<PipeConnection>(in, out);
    return hcomm::transport::authenticate_connections("pipe", rank, key, connections, deadline);
  };
  auto one = std::async(std::launch::async, side, 1, key_of(secret1), b, a);
  Status zero = side(0, key_of(secret0), a, b);
  return {zero, one.get()};
}

}  // namespace

TEST_CASE("application connections with the same key authenticate both ways") {
  // Not a structured binding: CHECK_MESSAGE captures it in a lambda (C++20 only).
  const auto pair = run_pair("the-same-secret-0123", "the-same-secret-0123");
  const Status &zero = pair.first, &one = pair.second;
  CHECK_MESSAGE(zero.ok(), zero.message());
  CHECK_MESSAGE(one.ok(), one.message());
}

TEST_CASE("application connections with different keys fail on both ranks in time") {
  // Not a structured binding: CHECK_MESSAGE captures it in a lambda (C++20 only).
  const auto pair = run_pair("the-same-secret-0123", "another-secret-45678");
  const Status &zero = pair.first, &one = pair.second;
  CHECK(zero.code() != hcomm::HCOMM_SUCCESS);
  CHECK(one.code() != hcomm::HCOMM_SUCCESS);
  // The acceptor (rank 0) sees the wrong proof and names its peer.
  CHECK(zero.code() == hcomm::HCOMM_ERR_TRANSPORT);
  CHECK(zero.message().find("rank 1 failed the job-key handshake") != std::string::npos);
  // The connector hears nothing more and runs into the deadline.
  CHECK(one.code() == hcomm::HCOMM_ERR_TIMEOUT);
}
