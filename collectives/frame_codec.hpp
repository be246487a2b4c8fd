// One communicator's codec work on its frames, for the ScheduleExecutor: encoding a send step's
// payload, decoding a received one, and the per-stream state that delta and error feedback keep.
//
// A stream is what repeats from one call to the next: the same peer, operation kind, step, chunk
// and offset of an operation of the same size (point to point: the same tag). The sender keeps
// the last payload it sent on each delta stream, the receiver the last it received; a delta frame
// names the base it was made against (an id; 0: none), so a receiver that does not hold that base
// fails the operation (HCOMM_ERR_INTERNAL, with what to do) instead of decoding garbage. A failed
// operation drops the sender's bases for its peers: their next frames need no base.
//
// Lossy codecs: a receive that reduces rounds both its operands and its result to the frame's
// codec (decode_reduce.hpp), and a send first rounds its source in place to what the receivers
// will decode — unless the source is the application's input, which hcomm never writes. So a
// value is the same on every rank that holds it, however it got there: every rank of an
// allreduce ends with the same bits. With error feedback, each stream's rounding error is added
// to its next payload before rounding, and an allreduce's inputs get theirs (round_inputs).
//
// Engine thread only (like the executor), except the policy (see compression_policy.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "collectives/compression_policy.hpp"
#include "collectives/operation.hpp"
#include "collectives/schedule.hpp"
#include "compression/codec.hpp"
#include "hcomm/status.hpp"
#include "transport/frame.hpp"

namespace hcomm::collectives {

class FrameCodec {
 public:
  explicit FrameCodec(std::shared_ptr<CompressionPolicy> policy) : policy_(std::move(policy)) {}

  using StreamKey = std::tuple<int, uint8_t, uint32_t, uint32_t, uint64_t, uint64_t, int64_t>;
  /// What a receive learned from its frame's header.
  struct Incoming {
    compression::Codec codec = compression::Codec::none;
    std::vector<std::byte> staging;  // lossless payloads, decoded once whole
    StreamKey stream;                // the sender's key (its offset, not this rank's)
  };

  /// Before planning, with error feedback on (`feedback`): an allreduce under fp16/bf16 runs in
  /// place on its inputs plus their buffer's residual (by buffer, count and type), rounded to the
  /// codec into the output buffer; what rounding took off is kept for the buffer's next call.
  /// Leaves other operations alone, and everything without `feedback`.
  using InputResiduals = std::map<std::tuple<const void*, size_t, uint8_t>, std::vector<std::byte>>;
  static void round_inputs(Operation& op, InputResiduals* feedback);

  /// Encodes `st`'s payload for its frame: sets the codec bits of `h.flags` and `h.length` and
  /// returns where the payload is (`st.src` as it is, or `wire`, which must live until sent).
  /// `input`/`input_bytes`: the application's input buffer, which is never written (the source
  /// is rounded in place anywhere else, see above).
  const void* encode(const Operation& op, const Step& st, const std::byte* input,
                     size_t input_bytes, transport::FrameHeader& h, std::vector<std::byte>& wire);
  /// Checks an arriving frame's codec and length against `st`; fills `in`. Non-OK: rejected.
  Status accept(const Operation& op, const Step& st, const transport::FrameHeader& h, Incoming& in);
  /// Where the payload is stored whole (nullptr: pieces through on_piece()).
  void* destination(const Step& st, Incoming& in) const;
  size_t piece_granularity(const Operation& op, const Incoming& in) const;
  /// A piece of the payload (wire bytes at `offset`): reduced or stored as it arrives.
  void on_piece(const Operation& op, const Step& st, const Incoming& in, size_t offset,
                const void* data, size_t bytes);
  /// The whole payload arrived: decodes a lossless one into the step's destination.
  Status finish(const Operation& op, const Step& st, Incoming& in);
  /// `op` failed: its peers' delta bases are no longer shared with them.
  void forget(const Operation& op, int size);

  CompressionPolicy& policy() { return *policy_; }

 private:
  struct Base {
    uint64_t id = 0;
    std::vector<std::byte> bytes;
  };
  struct DeltaPrefix {
    uint64_t base_id = 0;
    uint64_t new_id = 0;
  };
  /// A stream's key as the sender makes it: from its step (sending) or from the header (receiving:
  /// the frame's offset is the sender's, which the V forms do not share with the receiver).
  static StreamKey key_of(const Operation& op, int peer, uint32_t step, uint32_t chunk,
                          uint64_t offset);
  const void* encode_payload(const Operation& op, const Step& st, const std::byte* input,
                             size_t input_bytes, transport::FrameHeader& h,
                             std::vector<std::byte>& wire);
  /// `src` plus the stream's residual, for error feedback (a scratch copy), or `src`.
  const std::byte* with_residual(const Operation& op, const StreamKey& key, const Step& st);
  void keep_residual(const Operation& op, const StreamKey& key, const Step& st,
                     const std::byte* sent, compression::Codec codec, const std::byte* wire);

  std::shared_ptr<CompressionPolicy> policy_;
  std::map<StreamKey, Base> sent_, received_;
  std::map<StreamKey, std::vector<std::byte>> residual_;
  std::vector<std::byte> scratch_, decoded_;
  uint64_t next_id_ = 1;
};

}  // namespace hcomm::collectives
