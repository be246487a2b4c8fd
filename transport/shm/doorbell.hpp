// A doorbell: how one process wakes another's progress engine blocked in epoll.
//
// A datagram socket bound to an abstract unix name (no file to clean up; it vanishes with the
// socket), watched by the owner's engine. The peer rings it with a 1-byte datagram; a full
// socket buffer already means "wake up", so a failed ring is no loss. Rung only when the other
// side said it is going to sleep (see LinkSegment), never on the busy path.
#pragma once

#include <string>

#include "hcomm/status.hpp"

namespace hcomm::transport::shm {

class Doorbell {
 public:
  /// Binds `name` (abstract namespace: unique per network namespace).
  static Expected<Doorbell> bind(const std::string& name);

  Doorbell() = default;
  Doorbell(Doorbell&& other) noexcept;
  Doorbell& operator=(Doorbell&& other) noexcept;
  ~Doorbell();

  /// For the engine's epoll: readable when rung.
  int fd() const { return fd_; }
  /// Empties the socket after a wake-up.
  void drain() const;
  /// Wakes the owner of `peer_name`.
  void ring(const std::string& peer_name) const;

 private:
  int fd_ = -1;
};

}  // namespace hcomm::transport::shm
