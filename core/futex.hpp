// Futex waits and wake-ups: the one place hcomm calls SYS_futex. Completions, the progress
// engine's parking and SharedMemoryChannel's readers all sleep on a 32-bit atomic this way.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

namespace hcomm::core {

/// `process`: the word lives in this process only (the cheaper private futex); `shared`: in
/// memory mapped by several processes.
enum class FutexScope { process, shared };

/// Sleeps while *word == expected, for at most `timeout` (returns at once for timeout <= 0).
/// Callers re-check their condition: wake-ups may be spurious.
inline void futex_wait(std::atomic<uint32_t>* word, uint32_t expected,
                       std::chrono::nanoseconds timeout, FutexScope scope = FutexScope::process) {
  const auto ns = timeout.count();
  if (ns <= 0) return;
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word),
          scope == FutexScope::process ? FUTEX_WAIT_PRIVATE : FUTEX_WAIT, expected, &ts, nullptr,
          0);
}

/// Wakes up to `count` threads sleeping on `word`.
inline void futex_wake(std::atomic<uint32_t>* word, int count,
                       FutexScope scope = FutexScope::process) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word),
          scope == FutexScope::process ? FUTEX_WAKE_PRIVATE : FUTEX_WAKE, count, nullptr, nullptr,
          0);
}

}  // namespace hcomm::core
