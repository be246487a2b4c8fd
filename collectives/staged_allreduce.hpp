// The allreduce of a one-host communicator above the slot size: through the slot board's staging
// areas, in three passes over the data instead of the four a ring or halving-doubling exchange
// over pair links takes.
//
// The buffer is cut into steps of one part per rank (part q of each step is rank q's to reduce).
// Per step, each rank
//   1. copies its input's parts for the others into the step's place in its own staging ring
//      (contributed),
//   2. reduces its own part from its input and the others' staged copies into its output, block
//      by block, copying each block into its ring while the block is still in cache (reduced),
//   3. copies the others' results out of their rings into its output (consumed).
// On 2 ranks that is one pass over half the buffer less than halving-doubling (copy in, reduce,
// copy the result in, copy out), and every rank's output gets the very bits its owner computed.
// Steps pipeline through each rank's staging ring (SlotBoard::kStageBytes): a step takes the next
// bytes of the ring, once every other rank has consumed what they held, and an operation starts
// where the last one ended (its base, published for the readers). Parts are large (256 KiB on 2
// ranks): each step hands three cache lines of flags between the cores, so small parts cost more
// hand-overs than copying saves.
//
// Flags carry the slot operation number, so a rank can tell "not yet" from "another operation":
// a rank that gives up an operation midway (deadline, dead peer) says so in `abandoned`, and the
// others fail it too instead of waiting for a step that will never come.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "collectives/operation.hpp"
#include "hcomm/status.hpp"
#include "transport/shm/cell_writer.hpp"
#include "transport/shm/slot_board.hpp"

namespace hcomm::collectives {

/// Where step `step` of an operation lies in a staging ring of `ring_bytes`, its steps of
/// `step_bytes` beginning at `base`: one after another, except that a step that would cross the
/// ring's end starts the next lap instead. Positions only grow; the byte is position % ring_bytes.
/// @pre 0 < step_bytes <= ring_bytes
uint64_t stage_position(uint64_t base, uint64_t step_bytes, uint64_t step, uint64_t ring_bytes);

class StagedAllreduce {
 public:
  StagedAllreduce(const transport::shm::SlotBoard& board, int rank);

  /// Whether `op` goes this way on `board` (the same answer on every rank for the same call).
  static bool handles(const transport::shm::SlotBoard& board, const Operation& op);

  /// Starts `op`, slot operation `seq`, once every rank's slot header matched this one's.
  /// `op` must outlive the exchange (until advance() says done, or abandon()).
  void begin(const Operation& op, uint64_t seq);
  enum class Progress {
    over,     ///< done, or failed into `*failure` because another rank gave it up
    waiting,  ///< `*wait` names what it waits for (the first rank that is behind)
    more,     ///< `budget` moves made: call again (a poll of the engine thread stays short)
  };
  /// Does what the other ranks' progress allows, at most `budget` moves (a part copied in,
  /// reduced or copied out).
  Progress advance(transport::shm::BoardWait* wait, Status* failure, int budget);
  /// Gives up slot operation `seq` (begun or not): the others fail it instead of waiting, and
  /// may reuse their ring space.
  void abandon(uint64_t seq);

 private:
  struct Part {
    size_t offset = 0;  ///< into the buffer
    size_t bytes = 0;   ///< 0: past the end
  };
  Part part(uint64_t step, int owner) const;
  /// stage_position() of `step` in this operation, for a rank whose steps began at `base`.
  uint64_t position(uint64_t base, uint64_t step) const {
    return stage_position(base, step_bytes_, step, transport::shm::SlotBoard::kStageBytes);
  }
  /// Part `owner` of `step` in `rank`'s staging ring.
  std::byte* staged_part(int rank, uint64_t step, int owner) const;
  /// Whether this rank's ring is free for `step` (the others consumed what it held there).
  bool ring_free_for(uint64_t step, transport::shm::BoardWait* wait, Status* failure);
  /// Stages the next step's contributions if the ring has room; false when it has not (or
  /// every step is staged).
  bool try_contribute(transport::shm::BoardWait* wait, Status* failure);
  /// Whether every other rank's `flag` reached stage tag `target`; if not, `*wait` names the
  /// first that did not. A rank that gave this operation up sets `*failure`.
  bool others_reached(std::atomic<uint64_t> transport::shm::StageFlags::*flag, uint64_t target,
                      transport::shm::BoardWait* wait, Status* failure) const;
  void publish(std::atomic<uint64_t>& flag, uint64_t value);
  /// Copies into this rank's staging area, choosing its store mode per 32 KiB (CellWriter).
  void stage(std::byte* dst, const std::byte* src, size_t bytes);
  void contribute(uint64_t step);
  void reduce_own(uint64_t step);
  void consume(uint64_t step);

  const transport::shm::SlotBoard& board_;
  const int rank_;
  const int size_;
  transport::shm::CellWriter writer_;
  /// This rank's steps still held in its ring, oldest first: where each began, and the stage tag
  /// the others' `consumed` must reach before those bytes are written again.
  struct Held {
    uint64_t position;
    uint64_t tag;
  };
  std::deque<Held> held_;
  uint64_t cursor_ = 0;  ///< where the next operation's steps begin in this rank's ring

  // The operation under way.
  const Operation* op_ = nullptr;
  uint64_t seq_ = 0;
  size_t bytes_ = 0;
  size_t part_bytes_ = 0;
  size_t step_bytes_ = 0;
  uint64_t steps_ = 0;
  std::vector<uint64_t> base_;  ///< per rank, its ring position of this operation's first step
  bool bases_known_ = false;
  uint64_t contributed_ = 0, reduced_ = 0, consumed_ = 0;
  /// The whole operation fits in the ring: stage every step before reducing any.
  bool contribute_first_ = false;
};

}  // namespace hcomm::collectives
