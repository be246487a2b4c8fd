// The TCP frame stream as a receiver sees it: the input is what the peer sends, cut into chunks
// whose sizes the input picks (a chunk: one length byte, then that many bytes). The real
// TcpStream reads them from one end of a socket pair on a ProgressEngine, parsing frame headers
// (transport/frame.hpp) and routing payloads through its FrameRouter; it must fail the stream or
// take the frames, within bounds, whatever arrives.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "tests/fuzz/fuzz_engine.hpp"
#include "transport/frame_router.hpp"
#include "transport/tcp/tcp_stream.hpp"

using namespace hcomm;
using namespace hcomm::transport;
using hcomm::fuzz::engine;
using hcomm::fuzz::on_engine;
using hcomm::fuzz::unread;

namespace {

struct Observer final : LinkObserver {
  void on_remote_abort(int, uint32_t, uint64_t, const std::string&) override {}
  bool should_drop(const FrameHeader&) override { return false; }
  void on_link_failed(int, const Status&, bool) override {}
};

struct Owner final : tcp::StreamOwner {
  bool failed = false;
  void on_goodbye() override {}
  void on_stream_failed(const Status&, bool) override { failed = true; }
  void on_stream_established() override {}
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  engine();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
  Observer observer;
  Owner owner;
  std::unique_ptr<FrameRouter> router;
  std::unique_ptr<tcp::TcpStream> stream;
  on_engine([&] {
    router = std::make_unique<FrameRouter>(observer, 1);
    stream = std::make_unique<tcp::TcpStream>(engine(), fds[0], owner, *router, "fuzz peer");
  });
  auto drain = [&](std::chrono::microseconds most) {
    const auto until = ProgressEngine::Clock::now() + most;
    engine().drive_until([&] { return owner.failed || unread(fds[0]) == 0; }, until);
  };
  size_t at = 0;
  while (at < size && !owner.failed) {
    const size_t want = size_t{data[at]} + 1;
    ++at;
    const size_t chunk = std::min(want, size - at);
    if (send(fds[1], data + at, chunk, MSG_DONTWAIT | MSG_NOSIGNAL) <= 0) break;
    at += chunk;
    drain(std::chrono::microseconds(500));
  }
  shutdown(fds[1], SHUT_WR);  // the peer is gone: end of stream
  engine().drive_until([&] { return owner.failed; },
                       ProgressEngine::Clock::now() + std::chrono::milliseconds(2));
  on_engine([&] {
    stream.reset();  // closes fds[0]
    router->fail({HCOMM_ERR_ABORTED, "fuzz input done"});
    router.reset();
  });
  close(fds[1]);
  return 0;
}
