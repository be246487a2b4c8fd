#include "collectives/frame_codec.hpp"

#include <cstring>
#include <string>

#include "collectives/decode_reduce.hpp"
#include "collectives/reduce_kernels.hpp"
#include "compression/half_codec.hpp"
#include "compression/payload_codec.hpp"

namespace hcomm::collectives {

using compression::Codec;

namespace {

std::vector<std::byte>& body_buffer() {
  thread_local std::vector<std::byte> body;
  return body;
}

/// out[i] = a[i] + sign * b[i] for n elements of T at any alignment (error feedback's sums).
template <class T>
void combine(std::byte* out, const std::byte* a, const std::byte* b, size_t n, T sign) {
  for (size_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, a + i * sizeof(T), sizeof(T));
    std::memcpy(&y, b + i * sizeof(T), sizeof(T));
    x += sign * y;
    std::memcpy(out + i * sizeof(T), &x, sizeof(T));
  }
}

/// out = a + b (sign 1) or a - b (sign -1), float32 or float64 elements.
void combine(DataType dtype, std::byte* out, const std::byte* a, const std::byte* b, size_t n,
             int sign) {
  if (dtype == DataType::float32)
    combine<float>(out, a, b, n, static_cast<float>(sign));
  else
    combine<double>(out, a, b, n, static_cast<double>(sign));
}

}  // namespace

void FrameCodec::round_inputs(Operation& op, InputResiduals* feedback) {
  const Codec codec = forced_codec(op.compression);
  if (feedback == nullptr || op.kind != OpKind::allreduce || !compression::is_lossy(codec) ||
      !compression::applies_to(codec, op.dtype) || op.count == 0 || op.recv == nullptr ||
      op.send == nullptr)
    return;
  const size_t bytes = op.count * dtype_size(op.dtype);
  std::vector<std::byte>& residual =
      (*feedback)[{op.send, op.count, static_cast<uint8_t>(op.dtype)}];
  const std::byte* input = op.send;
  std::vector<std::byte> with_residual;
  if (residual.size() == bytes) {
    with_residual.resize(bytes);
    combine(op.dtype, with_residual.data(), op.send, residual.data(), op.count, 1);
    input = with_residual.data();
  }
  std::vector<uint16_t> wire(op.count);
  const Codec got = compression::encode_half(codec, input, op.count, op.dtype, wire.data());
  if (got == Codec::none) return;  // travels raw: nothing to carry over
  compression::decode_half(got, wire.data(), op.count, op.dtype, op.recv);
  residual.resize(bytes);  // what rounding took off, for the buffer's next call
  combine(op.dtype, residual.data(), input, op.recv, op.count, -1);
  op.send = op.recv;
  op.inputs_rounded = true;
}

FrameCodec::StreamKey FrameCodec::key_of(const Operation& op, int peer, uint32_t step,
                                         uint32_t chunk, uint64_t offset) {
  const OpKind kind = op.kind == OpKind::recv ? OpKind::send : op.kind;
  return {peer,
          static_cast<uint8_t>(kind),
          step,
          chunk,
          offset,
          op.agreed_bytes(),
          is_collective(op.kind) ? -1 : op.tag};
}

const std::byte* FrameCodec::with_residual(const Operation& op, const StreamKey& key,
                                           const Step& st) {
  auto it = residual_.find(key);
  if (it == residual_.end() || it->second.size() != st.bytes) return st.src;
  scratch_.resize(st.bytes);
  const size_t n = st.bytes / dtype_size(op.dtype);
  combine(op.dtype, scratch_.data(), st.src, it->second.data(), n, 1);
  return scratch_.data();
}

void FrameCodec::keep_residual(const Operation& op, const StreamKey& key, const Step& st,
                               const std::byte* sent, Codec codec, const std::byte* wire) {
  auto& r = residual_[key];
  r.resize(st.bytes);
  const size_t n = st.bytes / dtype_size(op.dtype);
  decode_into(codec, wire, n, op.dtype, r.data());
  combine(op.dtype, r.data(), sent, r.data(), n, -1);
}

const void* FrameCodec::encode(const Operation& op, const Step& st, const std::byte* input,
                               size_t input_bytes, transport::FrameHeader& h,
                               std::vector<std::byte>& wire) {
  const void* payload = encode_payload(op, st, input, input_bytes, h, wire);
  policy_->count(st.bytes, h.length);
  return payload;
}

const void* FrameCodec::encode_payload(const Operation& op, const Step& st, const std::byte* input,
                                       size_t input_bytes, transport::FrameHeader& h,
                                       std::vector<std::byte>& wire) {
  h.flags = static_cast<uint8_t>(h.flags & ~transport::kFrameCodecMask);
  h.length = st.bytes;
  wire.clear();
  if (op.compression == Compression::none) return st.src;
  const Codec want = policy_->choose(op.compression, op.dtype, st.peer, st.bytes);
  if (want == Codec::none) return st.src;
  const StreamKey key = key_of(op, st.peer, st.tag_step, st.tag_chunk, st.offset);
  const bool feedback = compression::is_lossy(want) && policy_->error_feedback();
  const std::byte* src = feedback ? with_residual(op, key, st) : st.src;
  DeltaPrefix prefix;
  const void* base = nullptr;
  if (want == Codec::delta) {
    if (auto it = sent_.find(key); it != sent_.end() && it->second.bytes.size() == st.bytes) {
      base = it->second.bytes.data();
      prefix.base_id = it->second.id;
    }
    prefix.new_id = next_id_++;
  }
  std::vector<std::byte>& body = body_buffer();
  const Codec got = compression::encode_payload(want, op.dtype, src, st.bytes, base, body);
  const size_t extra = got == Codec::delta ? sizeof prefix : 0;
  if (got == Codec::none || body.size() + extra >= st.bytes) return st.src;  // goes raw
  wire.resize(extra + body.size());
  if (extra > 0) std::memcpy(wire.data(), &prefix, sizeof prefix);
  std::memcpy(wire.data() + extra, body.data(), body.size());
  if (op.compression == Compression::automatic) policy_->observe(st.peer, st.bytes, wire.size());
  if (got == Codec::delta) {
    Base& b = sent_[key];
    b.id = prefix.new_id;
    b.bytes.assign(st.src, st.src + st.bytes);
  }
  if (compression::is_lossy(got)) {
    if (feedback) keep_residual(op, key, st, src, got, wire.data());
    const bool from_input =
        !op.inputs_rounded && input != nullptr && st.src >= input && st.src < input + input_bytes;
    if (!from_input)
      decode_into(got, wire.data(), st.bytes / dtype_size(op.dtype), op.dtype,
                  const_cast<std::byte*>(st.src));
  }
  h.flags =
      static_cast<uint8_t>(h.flags | static_cast<uint8_t>(got) << transport::kFrameCodecShift);
  h.length = wire.size();
  return wire.data();
}

Status FrameCodec::accept(const Operation& op, const Step& st, const transport::FrameHeader& h,
                          Incoming& in) {
  const uint8_t id =
      static_cast<uint8_t>((h.flags & transport::kFrameCodecMask) >> transport::kFrameCodecShift);
  const std::string who = "rank " + std::to_string(h.src_rank);
  if (!compression::codec_from_wire(id, in.codec))
    return {HCOMM_ERR_INVALID_ARG, who + " sent a payload in codec " + std::to_string(id) +
                                       ", which this hcomm does not know: run one version"};
  const size_t es = dtype_size(op.dtype);
  if (compression::is_lossy(in.codec)) {
    if (!compression::applies_to(in.codec, op.dtype) || st.bytes % es != 0 ||
        h.length != st.bytes / es * compression::kHalfBytes)
      return {HCOMM_ERR_INVALID_ARG, who + " sent " + std::to_string(h.length) + " bytes of " +
                                         compression::codec_name(in.codec) +
                                         " where this rank expects " + std::to_string(st.bytes) +
                                         " bytes of " + dtype_name(op.dtype) +
                                         ": every rank must pass the same count and type"};
    return {};
  }
  // Lossless: never more than the raw payload plus the codec's headers.
  if (h.length == 0 || h.length > st.bytes + 64)
    return {HCOMM_ERR_INVALID_ARG, who + " sent a " + compression::codec_name(in.codec) +
                                       " payload of " + std::to_string(h.length) +
                                       " bytes where this rank expects at most " +
                                       std::to_string(st.bytes) + " raw bytes"};
  in.staging.resize(h.length);
  in.stream = key_of(op, st.peer, h.step, h.chunk, h.offset);
  return {};
}

void* FrameCodec::destination(const Step&, Incoming& in) const {
  return compression::is_lossy(in.codec) ? nullptr : in.staging.data();
}

size_t FrameCodec::piece_granularity(const Operation&, const Incoming& in) const {
  return compression::is_lossy(in.codec) ? compression::kHalfBytes : 1;
}

void FrameCodec::on_piece(const Operation& op, const Step& st, const Incoming& in, size_t offset,
                          const void* data, size_t bytes) {
  if (!compression::is_lossy(in.codec)) {
    std::memcpy(const_cast<std::byte*>(in.staging.data()) + offset, data, bytes);
    return;
  }
  const size_t es = dtype_size(op.dtype);
  const size_t first = offset / compression::kHalfBytes;
  const size_t n = bytes / compression::kHalfBytes;
  if (st.kind == Step::Kind::recv)
    decode_into(in.codec, data, n, op.dtype, st.dst + first * es);
  else
    decode_reduce(in.codec, data, n, op.dtype, op.redop, st.dst + first * es, st.src + first * es);
}

Status FrameCodec::finish(const Operation& op, const Step& st, Incoming& in) {
  if (in.codec == Codec::none || compression::is_lossy(in.codec)) return {};
  const std::byte* p = in.staging.data();
  size_t len = in.staging.size();
  const void* base = nullptr;
  DeltaPrefix prefix;
  StreamKey key;
  if (in.codec == Codec::delta) {
    if (len < sizeof prefix)
      return {HCOMM_ERR_TRANSPORT, "a delta payload shorter than its prefix"};
    std::memcpy(&prefix, p, sizeof prefix);
    p += sizeof prefix;
    len -= sizeof prefix;
    key = in.stream;
    auto it = received_.find(key);
    if (prefix.base_id != 0) {
      if (it == received_.end() || it->second.id != prefix.base_id ||
          it->second.bytes.size() != st.bytes)
        return {HCOMM_ERR_INTERNAL,
                "rank " + std::to_string(st.peer) +
                    " sent a delta payload made against one this rank does not hold (operations "
                    "of one stream completed out of order, or an earlier one failed): keep one "
                    "operation per buffer in flight with HCOMM_COMPRESSION=delta, or use zstd"};
      base = it->second.bytes.data();
    }
  }
  std::byte* out = st.dst;
  if (st.kind == Step::Kind::recv_reduce) {
    decoded_.resize(st.bytes);
    out = decoded_.data();
  }
  Status s = compression::decode_payload(in.codec, op.dtype, p, len, base, out, st.bytes);
  if (!s.ok()) return s;
  if (in.codec == Codec::delta) {
    Base& b = received_[key];
    b.id = prefix.new_id;
    b.bytes.assign(out, out + st.bytes);
  }
  if (st.kind == Step::Kind::recv_reduce)
    reduce(st.dst, st.src, out, st.bytes / dtype_size(op.dtype), op.dtype, op.redop);
  return {};
}

void FrameCodec::forget(const Operation& op, int size) {
  for (auto it = sent_.begin(); it != sent_.end();) {
    const int peer = std::get<0>(it->first);
    const bool involved = is_collective(op.kind) ? peer >= 0 && peer < size : peer == op.peer;
    it = involved ? sent_.erase(it) : std::next(it);
  }
}

}  // namespace hcomm::collectives
