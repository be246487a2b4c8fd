// The progress engine the socket-driven fuzz targets run their object under test on: made once
// (not an input's allocation), driven by the fuzzing thread itself.
#pragma once

#include <sys/ioctl.h>

#include "transport/progress_engine.hpp"

namespace hcomm::fuzz {

inline transport::ProgressEngine& engine() {
  static transport::ProgressEngine e;
  return e;
}

/// Runs `task` on the engine (this thread drives it) and waits for it.
template <typename F>
void on_engine(F task) {
  bool done = false;
  engine().post(
      [&] {
        task();
        done = true;
      },
      transport::ProgressEngine::Waker::caller);
  engine().drive_until([&] { return done; }, transport::ProgressEngine::Clock::time_point::max());
}

/// Bytes waiting to be read on `fd`.
inline int unread(int fd) {
  int n = 0;
  return ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

}  // namespace hcomm::fuzz
