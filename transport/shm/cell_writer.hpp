// How a ShmLink's producer writes payload into ring cells: ordinary stores or streaming
// (non-temporal) ones, whichever this pair of cores does faster right now.
//
// Why both: an ordinary store into a cell line the consumer still caches from the ring's last lap
// must first take the line from the consumer's cache, which costs little when the two cores share
// a cache and a great deal when they do not — and a VM's vCPUs move between the two for seconds
// at a time. Streaming stores do not wait for the consumer's copy, but the consumer then reads the
// cell from memory, so they lose when the cores are close. So the writer times full cells in both
// modes and uses the cheaper, trying the other on one full cell in kExploreEvery to notice when
// the state changes (README, "Shared memory within a host", has the figures). Cells smaller than
// kMinStreamBytes are always written with ordinary stores: the consumer reads them at once, a small
// message's latency is what matters, and timing them says little.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#else
#include <chrono>
#endif

#include "transport/shm/cell_copy.hpp"

namespace hcomm::transport::shm {

/// The decision, apart from timing and copying (unit-tested with made-up costs).
class CellStoreChooser {
 public:
  enum class Mode : uint8_t { cached = 0, streaming = 1 };
  static constexpr uint32_t kExploreEvery = 128;
  /// Streaming must write cells this many times faster to be used: the consumer then reads them
  /// from memory, which its copy pays for and this timing does not see.
  static constexpr uint64_t kStreamingAdvantage = 3;

  /// The mode to write the next full cell in: each mode first once, then the one with the lower
  /// average cost, except every kExploreEvery-th cell, which goes the other way.
  Mode next() {
    ++cells_;
    if (average_[0] == 0) return Mode::cached;
    if (average_[1] == 0) return Mode::streaming;
    const Mode best = preferred();
    if (cells_ % kExploreEvery != 0) return best;
    return best == Mode::cached ? Mode::streaming : Mode::cached;
  }

  /// The mode with the lower average cost so far (cached while either is unknown).
  Mode preferred() const {
    return average_[0] != 0 && average_[1] != 0 && kStreamingAdvantage * average_[1] < average_[0]
               ? Mode::streaming
               : Mode::cached;
  }

  /// What writing one full cell in `mode` cost, in any unit that is the same for both modes.
  void report(Mode mode, uint64_t cost) {
    uint64_t& avg = average_[static_cast<int>(mode)];
    cost = std::max<uint64_t>(cost, 1);
    if (avg == 0) {
      avg = cost;
    } else if (cost < avg) {
      avg = (avg + cost) / 2;  // a cheap copy is never an artefact: follow it at once
    } else {
      // A preempted copy says nothing about the cores: cap one sample's pull on the average.
      avg += (std::min(cost, 4 * avg) - avg) / 8;
    }
  }

  uint64_t average(Mode mode) const { return average_[static_cast<int>(mode)]; }

 private:
  uint64_t average_[2] = {0, 0};
  uint64_t cells_ = 0;
};

/// Writes cells, choosing the store mode with a CellStoreChooser fed by the time stamp counter.
class CellWriter {
 public:
  static constexpr size_t kMinStreamBytes = 4096;

  /// Copies n bytes into a cell; `full` when n is the ring's whole cell size (then it is timed).
  /// Streamed stores are fenced before this returns, so publishing the cell may follow.
  void write(std::byte* cell, const std::byte* src, size_t n, bool full) {
    if (n < kMinStreamBytes) return cell_copy(cell, src, n);
    if (!full) return copy(chooser_.preferred(), cell, src, n);
    const auto mode = chooser_.next();
    const uint64_t start = ticks();
    copy(mode, cell, src, n);
    chooser_.report(mode, ticks() - start);
  }

  const CellStoreChooser& chooser() const { return chooser_; }

 private:
  static void copy(CellStoreChooser::Mode mode, std::byte* cell, const std::byte* src, size_t n) {
    if (mode == CellStoreChooser::Mode::cached) return cell_copy(cell, src, n);
    stream_copy(cell, src, n);
    stream_fence();
  }
  static uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();  // a few cycles; both modes are timed alike, so its rate does not matter
#else
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
  }

  CellStoreChooser chooser_;
};

}  // namespace hcomm::transport::shm
