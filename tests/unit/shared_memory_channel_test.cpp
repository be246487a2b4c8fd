// SharedMemoryChannel across real processes (fork): whole versions only, waiting, the errors a
// user meets (missing name, size mismatch, second writer, writer gone), and no /dev/shm leaks.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <hcomm/shared_memory_channel.hpp>

using hcomm::SharedMemoryChannel;
using namespace std::chrono_literals;

namespace {

std::string unique_name(const char* what) {
  return std::string("test-") + what + "-" + std::to_string(getpid());
}

bool segment_exists(const std::string& name) {
  return access(("/dev/shm/hcomm-channel-" + name).c_str(), F_OK) == 0;
}

/// Version v's content: every byte a function of (v, index), so a torn read shows.
std::vector<std::byte> content(uint64_t v, size_t bytes) {
  std::vector<std::byte> b(bytes);
  for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<std::byte>((v * 131 + i * 7) & 0xff);
  return b;
}

}  // namespace

TEST_CASE("a writer and a reader in two processes: every read is one whole version") {
  const std::string name = unique_name("race");
  constexpr size_t kBytes = 64 * 1024;
  constexpr uint64_t kVersions = 2000;
  pid_t reader_pid = fork();
  if (reader_pid == 0) {
    auto reader = SharedMemoryChannel::open(name, kBytes, 5000ms);
    if (!reader.ok()) _exit(10);
    std::vector<std::byte> got;
    uint64_t last = 0, reads = 0;
    for (;;) {
      auto v = (*reader)->read(got, last, 5000ms);
      if (!v.ok())
        _exit(v.status().code() == hcomm::HCOMM_ERR_PEER_LOST && last == kVersions ? 0 : 11);
      if (got != content(*v, got.size()) || got.size() != kBytes - (*v % 1000)) _exit(13);
      last = *v;
      ++reads;
    }
  }
  {
    auto writer = SharedMemoryChannel::create(name, kBytes);
    REQUIRE(writer.ok());
    CHECK((*writer)->is_writer());
    for (uint64_t v = 1; v <= kVersions; ++v) {
      auto data = content(v, kBytes - (v % 1000));
      REQUIRE((*writer)->write(data.data(), data.size()).ok());
    }
    std::this_thread::sleep_for(50ms);  // let the reader see the last version before closing
  }
  int status = 0;
  waitpid(reader_pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(segment_exists(name));
}

TEST_CASE("waiting: a reader sleeps until the next version or its deadline") {
  const std::string name = unique_name("wait");
  auto writer = SharedMemoryChannel::create(name, 16);
  REQUIRE(writer.ok());
  auto reader = SharedMemoryChannel::open(name, 16);
  REQUIRE(reader.ok());
  std::vector<std::byte> got;
  auto none = (*reader)->read(got, 0, 20ms);
  CHECK(none.status().code() == hcomm::HCOMM_ERR_TIMEOUT);
  std::thread later([&] {
    std::this_thread::sleep_for(20ms);
    const char msg[] = "hello";
    (void)(*writer)->write(msg, sizeof msg);
  });
  auto v = (*reader)->read(got, 0, 2000ms);
  later.join();
  REQUIRE(v.ok());
  CHECK(*v == 1);
  CHECK(std::string(reinterpret_cast<const char*>(got.data())) == "hello");
  CHECK((*reader)->write("x", 1).code() == hcomm::HCOMM_ERR_INVALID_ARG);  // readers do not write
  CHECK((*writer)->write("too long for sixteen", 21).code() == hcomm::HCOMM_ERR_INVALID_ARG);
}

TEST_CASE("the errors a user meets say what happened and what to do") {
  const std::string name = unique_name("errors");
  auto missing = SharedMemoryChannel::open(name, 0, 10ms);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == hcomm::HCOMM_ERR_TIMEOUT);
  CHECK(missing.status().message().find("create()") != std::string::npos);

  auto writer = SharedMemoryChannel::create(name, 1024);
  REQUIRE(writer.ok());
  auto wrong_size = SharedMemoryChannel::open(name, 2048);
  REQUIRE_FALSE(wrong_size.ok());
  CHECK(wrong_size.status().code() == hcomm::HCOMM_ERR_INVALID_ARG);
  CHECK(wrong_size.status().message().find("1024") != std::string::npos);
  CHECK(wrong_size.status().message().find("2048") != std::string::npos);

  auto second = SharedMemoryChannel::create(name, 1024);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().message().find("already written") != std::string::npos);

  for (const char* bad : {"", "a/b", "with space", "../up"})
    CHECK(SharedMemoryChannel::create(bad, 8).status().code() == hcomm::HCOMM_ERR_INVALID_ARG);
  CHECK(SharedMemoryChannel::create(unique_name("zero"), 0).status().code() ==
        hcomm::HCOMM_ERR_INVALID_ARG);
}

TEST_CASE("a reader that outlives its writer: the last version, then PEER_LOST") {
  const std::string name = unique_name("outlive");
  auto writer = SharedMemoryChannel::create(name, 8);
  REQUIRE(writer.ok());
  auto reader = SharedMemoryChannel::open(name, 8);
  REQUIRE(reader.ok());
  REQUIRE((*writer)->write("v1", 2).ok());
  writer->reset();  // closes and removes the name
  CHECK_FALSE(segment_exists(name));
  std::vector<std::byte> got;
  auto last = (*reader)->read(got, 0);
  REQUIRE(last.ok());  // what was published stays readable
  CHECK(*last == 1);
  auto after = (*reader)->read(got, 1, 1000ms);
  CHECK(after.status().code() == hcomm::HCOMM_ERR_PEER_LOST);
  CHECK(after.status().message().find("closed") != std::string::npos);
}

TEST_CASE("a writer killed by SIGKILL: readers are told, and the next create reclaims the name") {
  const std::string name = unique_name("killed");
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    auto writer = SharedMemoryChannel::create(name, 8);
    if (!writer.ok() || !(*writer)->write("v1", 2).ok()) _exit(10);
    char one = 1;
    (void)!::write(ready[1], &one, 1);
    pause();  // killed here, without any cleanup
    _exit(0);
  }
  char one = 0;
  REQUIRE(::read(ready[0], &one, 1) == 1);
  auto reader = SharedMemoryChannel::open(name, 8);
  REQUIRE(reader.ok());
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(ready[0]);
  close(ready[1]);
  CHECK(segment_exists(name));  // nobody removed it...
  std::vector<std::byte> got;
  auto gone = (*reader)->read(got, 1, 1000ms);
  CHECK(gone.status().code() == hcomm::HCOMM_ERR_PEER_LOST);
  CHECK(gone.status().message().find("is gone") != std::string::npos);
  {
    auto again = SharedMemoryChannel::create(name, 8);  // ...until the next writer reclaims it
    REQUIRE(again.ok());
  }
  CHECK_FALSE(segment_exists(name));
}
