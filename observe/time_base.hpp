// The operation path's timestamp: one read per recorded operation, so it must cost little. On x86
// with an invariant TSC it is the TSC (~15 ns; clock_gettime costs twice that in a VM), converted
// to steady-clock nanoseconds off the path by interpolating between calibration points that the
// observer thread takes (a TSC reading and a steady-clock reading together, every tick); elsewhere
// it is the steady clock itself.
//
// Threads: raw_now() anywhere; add_point() and to_ns() from any thread (a mutex: neither is on the
// operation path).
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>

#include "observe/op_record.hpp"

namespace hcomm::observe {

class TimeBase {
 public:
  /// The process's.
  static TimeBase& get();

  /// A timestamp in this process's raw units.
  static uint64_t raw_now();
  /// Whether raw units are TSC ticks (else nanoseconds of the steady clock).
  bool uses_tsc() const { return tsc_; }
  /// Records a calibration point (the observer thread, every tick).
  void add_point();
  /// `raw` as steady-clock nanoseconds.
  int64_t to_ns(uint64_t raw);

 private:
  TimeBase();
  uint64_t read_raw() const;
  std::mutex mutex_;
  bool tsc_ = false;
  std::deque<std::pair<uint64_t, int64_t>> points_;  // (raw, ns), increasing; under mutex_
};

}  // namespace hcomm::observe
