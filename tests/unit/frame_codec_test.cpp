// Tests for collectives::FrameCodec: a sender's and a receiver's codec on either side of a frame,
// driven by hand (no link): what the header says, what the receiver reconstructs, delta bases
// and their checks, pieces of a lossy payload reduced as they arrive, and the choice of codec.
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include <doctest/doctest.h>

#include "collectives/frame_codec.hpp"
#include "compression/half_float.hpp"

namespace {

using hcomm::Compression;
using hcomm::DataType;
using hcomm::ReduceOp;
using hcomm::collectives::CompressionPolicy;
using hcomm::collectives::FrameCodec;
using hcomm::collectives::Operation;
using hcomm::collectives::OpKind;
using hcomm::collectives::Step;
using hcomm::compression::Codec;
using hcomm::transport::FrameHeader;

std::shared_ptr<CompressionPolicy> two_hosts() {
  return std::make_shared<CompressionPolicy>(std::vector<bool>{true, false}, 1024, false);
}

struct Wire {
  FrameHeader header;
  std::vector<std::byte> bytes;
};

/// One send of `data` (float32) from a sender codec, as the frame it makes.
Wire send(FrameCodec& codec, Operation& op, const std::vector<float>& data) {
  Step st;
  st.kind = Step::Kind::send;
  st.peer = 1;
  st.src = reinterpret_cast<const std::byte*>(data.data());
  st.bytes = data.size() * sizeof(float);
  Wire w;
  std::vector<std::byte> wire;
  // The data is the application's input: never rounded in place.
  const void* payload = codec.encode(op, st, st.src, st.bytes, w.header, wire);
  w.bytes.assign(static_cast<const std::byte*>(payload),
                 static_cast<const std::byte*>(payload) + w.header.length);
  w.header.src_rank = 0;
  return w;
}

/// Delivers `w` to a receiver codec into `out` (a plain receive), in pieces of `piece` bytes.
hcomm::Status receive(FrameCodec& codec, Operation& op, const Wire& w, std::vector<float>& out,
                      size_t piece = 1 << 30) {
  Step st;
  st.kind = Step::Kind::recv;
  st.peer = 0;
  st.dst = reinterpret_cast<std::byte*>(out.data());
  st.bytes = out.size() * sizeof(float);
  FrameCodec::Incoming in;
  hcomm::Status s = codec.accept(op, st, w.header, in);
  if (!s.ok()) return s;
  if (void* dst = codec.destination(st, in)) {
    std::memcpy(dst, w.bytes.data(), w.bytes.size());
  } else {
    const size_t g = codec.piece_granularity(op, in);
    for (size_t at = 0; at < w.bytes.size(); at += piece / g * g)
      codec.on_piece(op, st, in, at, w.bytes.data() + at,
                     std::min(piece / g * g, w.bytes.size() - at));
  }
  return codec.finish(op, st, in);
}

Operation p2p(Compression mode, OpKind kind) {
  Operation op;
  op.kind = kind;
  op.dtype = DataType::float32;
  op.compression = mode;
  op.peer = kind == OpKind::send ? 1 : 0;
  op.tag = 7;
  op.count = 4096;
  return op;
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 97) / 7.0f;
  return v;
}

uint8_t codec_bits(const FrameHeader& h) {
  return static_cast<uint8_t>((h.flags & hcomm::transport::kFrameCodecMask) >>
                              hcomm::transport::kFrameCodecShift);
}

}  // namespace

TEST_CASE("frame codec: delta frames decode against the base both ends keep, in order only") {
  FrameCodec sender(two_hosts()), receiver(two_hosts());
  Operation tx = p2p(Compression::delta, OpKind::send), rx = p2p(Compression::none, OpKind::recv);
  auto v1 = ramp(4096, 1.0f), v2 = v1, v3 = v1;
  v2[10] = 99.0f;
  v3[20] = -5.0f;
  std::vector<float> out(4096);
  Wire w1 = send(sender, tx, v1);
  CHECK(codec_bits(w1.header) == static_cast<uint8_t>(Codec::delta));
  REQUIRE(receive(receiver, rx, w1, out).ok());
  CHECK(out == v1);
  Wire w2 = send(sender, tx, v2);
  CHECK(w2.header.length < 200);  // one element changed
  Wire w3 = send(sender, tx, v3);
  // Out of order: w3 was made against w2, which the receiver does not hold yet.
  hcomm::Status early = receive(receiver, rx, w3, out);
  CHECK(early.code() == HCOMM_ERR_INTERNAL);
  CHECK(early.message().find("one operation per buffer") != std::string::npos);
  REQUIRE(receive(receiver, rx, w2, out).ok());
  CHECK(out == v2);
  REQUIRE(receive(receiver, rx, w3, out).ok());
  CHECK(out == v3);
  // A failed operation makes the sender start afresh: its next frame needs no base.
  sender.forget(tx, 2);
  FrameCodec fresh_receiver(two_hosts());
  Wire w4 = send(sender, tx, v1);
  REQUIRE(receive(fresh_receiver, rx, w4, out).ok());
  CHECK(out == v1);
}

TEST_CASE("frame codec: fp16 pieces decode as they arrive, whatever their split") {
  FrameCodec sender(two_hosts()), receiver(two_hosts());
  Operation tx = p2p(Compression::fp16, OpKind::send), rx = p2p(Compression::none, OpKind::recv);
  auto v = ramp(4096, 0.37f);
  Wire w = send(sender, tx, v);
  CHECK(codec_bits(w.header) == static_cast<uint8_t>(Codec::fp16));
  CHECK(w.header.length == v.size() * 2);
  for (size_t piece : {size_t{2}, size_t{6}, size_t{1000}, size_t{1} << 20}) {
    std::vector<float> out(v.size(), -1);
    REQUIRE(receive(receiver, rx, w, out, piece).ok());
    for (size_t i = 0; i < v.size(); ++i)
      REQUIRE(out[i] == hcomm::compression::half_to_float(hcomm::compression::float_to_half(v[i])));
  }
  // A length that does not match the receiver's count is refused, naming both.
  Wire shorter = w;
  shorter.header.length -= 2;
  std::vector<float> out(v.size());
  hcomm::Status st = receive(receiver, rx, shorter, out);
  CHECK(st.code() == HCOMM_ERR_INVALID_ARG);
  CHECK(st.message().find("fp16") != std::string::npos);
}

TEST_CASE("frame codec: what goes raw, and an unknown codec id") {
  FrameCodec sender(two_hosts()), receiver(two_hosts());
  // Below the threshold, and integers under a lossy codec: raw, no codec bits.
  Operation small = p2p(Compression::fp16, OpKind::send);
  Wire w = send(sender, small, ramp(100, 1.0f));
  CHECK(codec_bits(w.header) == 0);
  Operation ints = p2p(Compression::bf16, OpKind::send);
  ints.dtype = DataType::int32;
  std::vector<float> as_ints(4096, 0.0f);
  w = send(sender, ints, as_ints);
  CHECK(codec_bits(w.header) == 0);
  // auto never compresses to a peer of the same host (rank 0 here).
  CompressionPolicy policy({true, false}, 1024, false);
  CHECK(policy.choose(Compression::automatic, DataType::float32, 0, 1 << 20) == Codec::none);
  CHECK(policy.explain(Compression::automatic, DataType::float32, 0, 1 << 20)
            .find("never compresses within a host") != std::string::npos);
  // ... and on a slow link with a good ratio, zstd (1 MB/s: slower than zstd runs on any build,
  // sanitizers included, since its speed is measured here).
  policy.set_link_speed(1);  // 1 MB/s
  for (int i = 0; i < 20; ++i) policy.observe(1, 1000, 100);
  CHECK(policy.choose(Compression::automatic, DataType::float32, 1, 1 << 20) == Codec::zstd);
  // A codec id this version does not know.
  Operation rx = p2p(Compression::none, OpKind::recv);
  Wire bad = send(sender, small, ramp(4096, 1.0f));
  bad.header.flags = static_cast<uint8_t>(bad.header.flags | 7 << 1);
  std::vector<float> out(4096);
  CHECK(receive(receiver, rx, bad, out).code() == HCOMM_ERR_INVALID_ARG);
}
