#include "observe/time_base.hpp"

#include <algorithm>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define HCOMM_HAVE_TSC 1
#endif

namespace hcomm::observe {

namespace {

constexpr size_t kMaxPoints = 100000;  // then every other one goes: the span stays, coarser

bool invariant_tsc() {
#ifdef HCOMM_HAVE_TSC
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) return false;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  return (d & (1u << 8)) != 0;
#else
  return false;
#endif
}

}  // namespace

TimeBase& TimeBase::get() {
  static TimeBase* const instance = new TimeBase();  // never destroyed: used until exit
  return *instance;
}

TimeBase::TimeBase() : tsc_(invariant_tsc()) {
  // Two points 2 ms apart give a first rate; the observer's ticks refine it.
  add_point();
  if (tsc_) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  add_point();
}

uint64_t TimeBase::raw_now() {
  return get().read_raw();
}

uint64_t TimeBase::read_raw() const {
#ifdef HCOMM_HAVE_TSC
  if (tsc_) return __rdtsc();
#endif
  return static_cast<uint64_t>(steady_ns());
}

void TimeBase::add_point() {
  const uint64_t raw = read_raw();
  const int64_t ns = steady_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!points_.empty() && raw <= points_.back().first) return;
  points_.emplace_back(raw, ns);
  if (points_.size() > kMaxPoints) {
    std::deque<std::pair<uint64_t, int64_t>> thinned;
    for (size_t i = 0; i < points_.size(); i += 2) thinned.push_back(points_[i]);
    thinned.push_back(points_.back());
    points_.swap(thinned);
  }
}

int64_t TimeBase::to_ns(uint64_t raw) {
  if (!tsc_) return static_cast<int64_t>(raw);
  std::lock_guard<std::mutex> lock(mutex_);
  // The two points around `raw` (or the last two, past the end; the first two, before the start).
  auto hi = std::upper_bound(points_.begin(), points_.end(), raw,
                             [](uint64_t r, const auto& p) { return r < p.first; });
  if (hi == points_.end()) --hi;
  if (hi == points_.begin()) ++hi;
  const auto lo = hi - 1;
  const double rate =
      static_cast<double>(hi->second - lo->second) / static_cast<double>(hi->first - lo->first);
  const double dt = raw >= lo->first ? static_cast<double>(raw - lo->first)
                                     : -static_cast<double>(lo->first - raw);
  return lo->second + static_cast<int64_t>(dt * rate);
}

}  // namespace hcomm::observe
