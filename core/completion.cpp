#include "core/completion.hpp"

#include <climits>

#include "core/futex.hpp"

namespace hcomm::core {

void Completion::complete(Status status) {
  const auto now = std::chrono::steady_clock::now();
  Work::Callback cb;
  bool waited = false;
  {
    std::lock_guard<std::mutex> lock(callback_mutex_);
    if (completing_) return;
    completing_ = true;
    completed_at_ = now;
    status_ = std::move(status);
    waited = state_.exchange(kDone, std::memory_order_acq_rel) == kWaited;
    cb = std::move(callback_);
  }
  if (waited) futex_wake(&state_, INT_MAX);
  if (cb) cb(status_);
}

bool Completion::wait_until(std::chrono::steady_clock::time_point deadline) const {
  if (done()) return true;
  if (auto driver = driver_.lock()) driver->drive(*this, deadline);
  while (!done()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    uint32_t expected = kPending;
    if (!state_.compare_exchange_strong(expected, kWaited) && expected == kDone) break;
    futex_wait(&state_, kWaited, deadline - now);
  }
  return true;
}

void Completion::on_complete(Work::Callback cb) {
  {
    std::lock_guard<std::mutex> lock(callback_mutex_);
    if (!completing_) {
      callback_ = std::move(cb);
      return;
    }
  }
  cb(status_);
}

}  // namespace hcomm::core
