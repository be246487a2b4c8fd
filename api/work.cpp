#include <climits>

#include "api/completion.hpp"
#include "hcomm/work.hpp"
#include "transport/futex.hpp"

namespace hcomm {
namespace detail {

void Completion::complete(Status status) {
  Work::Callback cb;
  bool waited = false;
  {
    std::lock_guard<std::mutex> lock(callback_mutex_);
    if (completing_) return;
    completing_ = true;
    status_ = std::move(status);
    waited = state_.exchange(kDone, std::memory_order_acq_rel) == kWaited;
    cb = std::move(callback_);
  }
  if (waited) transport::futex_wake(&state_, INT_MAX);
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
    transport::futex_wait(&state_, kWaited, deadline - now);
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

}  // namespace detail

Status Work::wait(std::chrono::milliseconds timeout) const {
  if (!c_) return {HCOMM_ERR_INVALID_ARG, "wait() on an empty Work handle"};
  if (!c_->wait_until(std::chrono::steady_clock::now() + timeout))
    return {HCOMM_ERR_TIMEOUT,
            "operation did not complete within " + std::to_string(timeout.count()) +
                " ms: a peer may be slow, stopped, or calling a different collective; "
                "HCOMM_DEBUG=INFO shows what each rank is doing"};
  return c_->status();
}

bool Work::test() const {
  return c_ && c_->done();
}

Status Work::status() const {
  if (!c_) return {HCOMM_ERR_INVALID_ARG, "status() on an empty Work handle"};
  if (!c_->done()) return {HCOMM_ERR_INTERNAL, "operation still running"};
  return c_->status();
}

void Work::on_complete(Callback cb) const {
  if (c_) c_->on_complete(std::move(cb));
}

}  // namespace hcomm
