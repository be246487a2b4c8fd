#include "observe/flight_recorder.hpp"

#include <algorithm>

namespace hcomm::observe {

void FlightRecorder::record(OpRecord record) {
  if (ring_.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (collectives::is_collective(record.kind)) newest_collective_ = next_ + 1;
  ring_[next_ % ring_.size()] = std::move(record);
  ++next_;
  // The operations before this one are usually done (a blocking loop): their completions are let
  // go now, while their memory is still in cache for the next operation to reuse.
  finalize_locked(kFinalizeOnRecord);
}

uint64_t FlightRecorder::recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_;
}

OpRecord FlightRecorder::detached(OpRecord& r) {
  r.stamp_ns();
  OpRecord copy = r;
  copy.completion.reset();
  return copy;
}

void FlightRecorder::finalize_locked(uint64_t at_most) {
  const uint64_t cap = ring_.size();
  first_open_ = std::max(first_open_, next_ > cap ? next_ - cap : 0);
  bool contiguous = true;
  const uint64_t end = next_ - first_open_ > at_most ? first_open_ + at_most : next_;
  for (uint64_t k = first_open_; k < end; ++k) {
    OpRecord& r = ring_[k % cap];
    const bool was_final = r.finished();
    const bool final = r.finalize();
    if (final && !was_final && r.state == OpState::failed && r.failure_code != HCOMM_ERR_ABORTED) {
      if (failures_++ == 0) first_failure_ = detached(r);
    }
    if (contiguous && final) first_open_ = k + 1;
    contiguous &= final;
  }
}

FlightRecorder::Scan FlightRecorder::scan() {
  Scan out;
  if (ring_.empty()) return out;
  std::lock_guard<std::mutex> lock(mutex_);
  finalize_locked();
  const uint64_t cap = ring_.size();
  for (uint64_t k = first_open_; k < next_; ++k) {
    OpRecord& r = ring_[k % cap];
    if (r.finished()) continue;
    ++out.in_flight;
    if (!out.oldest) out.oldest = detached(r);
  }
  if (newest_collective_ > 0 && newest_collective_ + cap > next_)
    out.newest_collective = detached(ring_[(newest_collective_ - 1) % cap]);
  out.failures = failures_;
  out.first_failure = first_failure_;
  return out;
}

std::vector<OpRecord> FlightRecorder::snapshot() {
  std::vector<OpRecord> out;
  if (ring_.empty()) return out;
  std::lock_guard<std::mutex> lock(mutex_);
  finalize_locked();
  const uint64_t cap = ring_.size();
  for (uint64_t k = next_ > cap ? next_ - cap : 0; k < next_; ++k)
    out.push_back(detached(ring_[k % cap]));
  return out;
}

}  // namespace hcomm::observe
