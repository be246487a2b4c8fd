#include "transport/shm/doorbell.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace hcomm::transport::shm {
namespace {

socklen_t abstract_address(const std::string& name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(addr->sun_path) - 1);
  std::memcpy(addr->sun_path + 1, name.data(), n);  // sun_path[0] == 0: abstract
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

}  // namespace

Expected<Doorbell> Doorbell::bind(const std::string& name) {
  Doorbell bell;
  bell.fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (bell.fd_ < 0)
    return Status{HCOMM_ERR_TRANSPORT,
                  std::string("cannot create a doorbell socket: ") + strerror(errno)};
  sockaddr_un addr;
  socklen_t len = abstract_address(name, &addr);
  if (::bind(bell.fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return Status{HCOMM_ERR_TRANSPORT,
                  "cannot bind doorbell @" + name + ": " + strerror(errno) +
                      (errno == EADDRINUSE ? " (another communicator uses the same uid?)" : "")};
  return bell;
}

Doorbell::Doorbell(Doorbell&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

Doorbell& Doorbell::operator=(Doorbell&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

Doorbell::~Doorbell() {
  if (fd_ >= 0) close(fd_);
}

void Doorbell::drain() const {
  char buf[64];
  while (recv(fd_, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
  }
}

void Doorbell::ring(const std::string& peer_name) const {
  sockaddr_un addr;
  socklen_t len = abstract_address(peer_name, &addr);
  const char one = 1;
  ssize_t ignored = sendto(fd_, &one, 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&addr), len);
  (void)ignored;
}

}  // namespace hcomm::transport::shm
