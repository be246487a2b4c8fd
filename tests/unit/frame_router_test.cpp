// FrameRouter / IncomingFrame: a frame that arrives before its receive is copied aside in a
// buffer that grows with the bytes that arrive, never with the length a header claims.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "transport/frame_router.hpp"

using hcomm::Status;
using hcomm::transport::FrameHeader;
using hcomm::transport::FrameRouter;
using hcomm::transport::HoldPolicy;
using hcomm::transport::IncomingFrame;
using hcomm::transport::LinkObserver;
using hcomm::transport::MatchKey;
using hcomm::transport::RecvRequest;

namespace {

struct Observer final : LinkObserver {
  int stored = 0;
  void on_remote_abort(int, uint32_t, uint64_t, const std::string&) override {}
  bool should_drop(const FrameHeader&) override { return false; }
  void on_link_failed(int, const Status&, bool) override {}
  void on_frame_stored(int, const FrameHeader&) override { ++stored; }
};

/// A receive into its own buffer.
struct Receive final : RecvRequest {
  std::vector<std::byte> buffer;
  bool done = false;
  Status status;
  explicit Receive(size_t bytes) : buffer(bytes) {}
  Status accept(const FrameHeader& h) override {
    if (h.length != buffer.size()) return {HCOMM_ERR_INVALID_ARG, "size mismatch"};
    return {};
  }
  void* destination() override { return buffer.data(); }
  void on_piece(size_t, const void*, size_t) override {}
  size_t piece_granularity() const override { return 1; }
  void on_received(const Status& st) override {
    done = true;
    status = st;
  }
};

FrameHeader data_header(uint64_t op_seq, uint64_t length) {
  FrameHeader h;
  h.op_seq = op_seq;
  h.length = length;
  return h;
}

std::vector<std::byte> pattern(size_t bytes) {
  std::vector<std::byte> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<std::byte>((i * 131 + 7) & 0xff);
  return v;
}

}  // namespace

TEST_CASE("an unexpected frame's buffer follows the bytes that arrive, not the claimed length") {
  Observer observer;
  FrameRouter router(observer, 1);
  IncomingFrame in(router, HoldPolicy{});
  // A header claiming 1 TiB: taking it must not try to allocate it.
  in.begin(data_header(1, uint64_t{1} << 40));
  REQUIRE(in.active());
  REQUIRE(in.target() != nullptr);
  CHECK(in.room() >= (size_t{1} << 20));
  CHECK(in.room() <= (size_t{16} << 20));
  in.fail({HCOMM_ERR_TRANSPORT, "peer went away"});
  CHECK_FALSE(in.active());
}

TEST_CASE("an unexpected frame larger than the first buffer arrives whole, written or added") {
  const size_t bytes = (size_t{40} << 20) + 12345;  // past the first 16 MiB, grown twice
  const std::vector<std::byte> sent = pattern(bytes);
  for (const bool medium_writes : {true, false}) {
    CAPTURE(medium_writes);
    Observer observer;
    FrameRouter router(observer, 1);
    IncomingFrame in(router, HoldPolicy{});
    in.begin(data_header(7, bytes));
    size_t off = 0;
    while (in.active()) {
      if (medium_writes) {
        std::byte* dst = in.target();
        REQUIRE(dst != nullptr);
        const size_t n = std::min({in.missing(), in.room(), size_t{3} << 20});
        REQUIRE(n > 0);
        std::memcpy(dst, sent.data() + off, n);
        off += n;
        in.wrote(n);
      } else {
        const size_t n = std::min(in.missing(), size_t{5} << 20);
        in.add(sent.data() + off, n);
        off += n;
      }
    }
    CHECK(observer.stored == 1);
    Receive r(bytes);
    r.key = MatchKey::of(data_header(7, bytes));
    REQUIRE(router.deliver_stored(&r));
    CHECK(r.done);
    CHECK(r.status.ok());
    CHECK(r.buffer == sent);
  }
}
