#include "hcomm/work.hpp"

#include "core/completion.hpp"

namespace hcomm {

Status Work::wait(std::chrono::milliseconds timeout) const {
  if (!c_) return {HCOMM_ERR_INVALID_ARG, "wait() on an empty Work handle"};
  using Clock = std::chrono::steady_clock;
  const auto now = Clock::now();
  // A timeout past the clock's range (milliseconds::max(): forever) must not overflow.
  const auto deadline = timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(
                                       Clock::time_point::max() - now)
                            ? Clock::time_point::max()
                            : now + timeout;
  if (!c_->wait_until(deadline))
    return {HCOMM_ERR_TIMEOUT,
            "operation did not complete within " + std::to_string(timeout.count()) +
                " ms: a peer may be slow, stopped, or calling a different collective; "
                "HCOMM_DEBUG=INFO shows what each rank is doing"};
  return c_->status();
}

int Work::source() const {
  return c_ ? c_->source() : -1;
}

std::chrono::steady_clock::time_point Work::completed_at() const {
  return c_ && c_->done() ? c_->completed_at() : std::chrono::steady_clock::time_point{};
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
