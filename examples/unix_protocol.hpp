// An example transport plugin: hcomm over Unix-domain stream sockets, for ranks on one host.
//
// What a plugin provides (hcomm/protocol.hpp): a Protocol that opens per communicator and
// publishes an address, tells which peers it reaches and connects to them, and a Connection per
// peer that moves whole messages. hcomm does the rest: it puts its frames into messages, matches
// them with receives, reduces, and handles errors.
//
// This one uses sockets in Linux's abstract namespace: a name instead of a file, gone when the
// socket closes, so a crashed job leaves nothing behind. Abstract names are per network
// namespace; ranks of one host in different namespaces do not reach each other here.
//
// Register it with HCOMM_REGISTER_PROTOCOL (see unix_protocol.cpp).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <hcomm/protocol.hpp>

namespace example {

using Clock = std::chrono::steady_clock;

/// The status for a failed system call: a peer that went away is HCOMM_ERR_PEER_LOST.
inline hcomm::Status socket_error(const std::string& what, int err) {
  const bool lost = err == EPIPE || err == ECONNRESET;
  return {lost ? hcomm::HCOMM_ERR_PEER_LOST : hcomm::HCOMM_ERR_TRANSPORT,
          what + ": " + std::strerror(err)};
}

/// The address of abstract socket `name` (a leading NUL byte, then the name, no terminator).
inline socklen_t abstract_address(const std::string& name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(addr->sun_path) - 1);
  std::memcpy(addr->sun_path + 1, name.data(), n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

/// One peer: messages framed by an 8-byte length prefix on a stream socket.
class UnixSocketConnection final : public hcomm::Connection {
 public:
  /// The largest message: hcomm splits its frames to fit.
  static constexpr size_t kMaxMessageBytes = size_t{1} << 20;
  /// How long a closing connection still tries to send what it queued (hcomm's goodbye).
  static constexpr auto kLinger = std::chrono::seconds(2);

  /// Takes over `fd`, a connected stream socket.
  explicit UnixSocketConnection(int fd) : fd_(fd) {
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    writer_ = std::thread([this] { write_queued(); });
  }

  ~UnixSocketConnection() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      linger_until_ = Clock::now() + kLinger;
    }
    wake_.notify_one();
    writer_.join();
    ::close(fd_);
  }

  UnixSocketConnection(const UnixSocketConnection&) = delete;
  UnixSocketConnection& operator=(const UnixSocketConnection&) = delete;

  // hcomm calls send() from its progress engine, which must not wait for the peer: two ranks
  // sending to each other with full socket buffers would wait forever (and in a ring, so would
  // every rank). So the socket takes what it can at once, and a writer thread sends the rest.
  // A real transport would use its hardware's queues instead of a thread.
  hcomm::Status send(const hcomm::ConstBuffer* parts, size_t count) override {
    uint64_t length = 0;
    for (size_t i = 0; i < count; ++i) length += parts[i].size;
    std::vector<iovec> iov;
    iov.push_back({&length, sizeof(length)});
    for (size_t i = 0; i < count; ++i)
      if (parts[i].size > 0) iov.push_back({const_cast<void*>(parts[i].data), parts[i].size});

    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_.ok()) return error_;
    size_t written = 0;
    if (queue_.empty()) {  // else the writer thread is behind, and order matters
      msghdr msg{};
      msg.msg_iov = iov.data();
      msg.msg_iovlen = iov.size();
      const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        written = static_cast<size_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        error_ = socket_error("send", errno);
        return error_;
      }
    }
    if (written == sizeof(length) + length) return {};
    // Copy what the socket did not take: the caller reuses its buffers when send() returns.
    std::vector<std::byte> rest;
    rest.reserve(sizeof(length) + length - written);
    for (const iovec& v : iov) {
      const size_t skip = std::min(written, v.iov_len);
      written -= skip;
      const auto* bytes = static_cast<const std::byte*>(v.iov_base);
      rest.insert(rest.end(), bytes + skip, bytes + v.iov_len);
    }
    queue_.push_back(std::move(rest));
    wake_.notify_one();
    return {};
  }

  // Never blocks: reads what the socket has, keeping a partial message for the next call.
  hcomm::Expected<std::optional<std::vector<std::byte>>> receive() override {
    for (;;) {
      ssize_t n;
      if (prefix_got_ < sizeof(prefix_)) {
        n = ::recv(fd_, reinterpret_cast<char*>(&prefix_) + prefix_got_,
                   sizeof(prefix_) - prefix_got_, MSG_DONTWAIT);
      } else {
        if (prefix_got_ == sizeof(prefix_) && message_.empty()) {
          if (prefix_ > kMaxMessageBytes)
            return hcomm::Status{
                hcomm::HCOMM_ERR_TRANSPORT,
                "a message of " + std::to_string(prefix_) + " bytes: not an hcomm unix peer?"};
          message_.resize(prefix_);
        }
        if (body_got_ == message_.size()) {  // complete (also a message of 0 bytes)
          std::vector<std::byte> done = std::move(message_);
          message_.clear();
          prefix_got_ = body_got_ = 0;
          return std::optional<std::vector<std::byte>>(std::move(done));
        }
        n = ::recv(fd_, message_.data() + body_got_, message_.size() - body_got_, MSG_DONTWAIT);
      }
      if (n > 0) {
        if (prefix_got_ < sizeof(prefix_))
          prefix_got_ += static_cast<size_t>(n);
        else
          body_got_ += static_cast<size_t>(n);
        continue;
      }
      if (n == 0) return hcomm::Status{hcomm::HCOMM_ERR_PEER_LOST, "the peer closed its socket"};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return std::optional<std::vector<std::byte>>();
      return socket_error("receive", errno);
    }
  }

  /// Readable when a message (or part of one) arrived: hcomm then calls receive() until it has
  /// nothing more.
  int event_fd() const override { return fd_; }

 private:
  void write_queued() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() || (stopping_ && Clock::now() >= linger_until_)) return;
      // Only this thread removes from the queue, so the front stays put while unlocked.
      const std::vector<std::byte>& front = queue_.front();
      lock.unlock();
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, 100);  // bounded: a closing connection checks its linger time
      const ssize_t n = ::send(fd_, front.data() + front_sent_, front.size() - front_sent_,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      const int err = errno;
      lock.lock();
      if (n > 0) {
        front_sent_ += static_cast<size_t>(n);
        if (front_sent_ == front.size()) {
          queue_.pop_front();
          front_sent_ = 0;
        }
      } else if (n < 0 && err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
        error_ = socket_error("send", err);  // the next send() reports it
        queue_.clear();
        front_sent_ = 0;
      }
    }
  }

  const int fd_;

  // ---- sending: shared with the writer thread
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::vector<std::byte>> queue_;  // what the socket did not take at once, in order
  size_t front_sent_ = 0;
  hcomm::Status error_;
  bool stopping_ = false;
  Clock::time_point linger_until_;
  std::thread writer_;

  // ---- receiving: the message being read
  uint64_t prefix_ = 0;
  size_t prefix_got_ = 0;
  std::vector<std::byte> message_;
  size_t body_got_ = 0;
};

class UnixSocketProtocol final : public hcomm::Protocol {
 public:
  UnixSocketProtocol() = default;
  ~UnixSocketProtocol() override {
    if (listener_ >= 0) ::close(listener_);
    for (auto& [rank, fd] : accepted_) ::close(fd);
  }
  UnixSocketProtocol(const UnixSocketProtocol&) = delete;
  UnixSocketProtocol& operator=(const UnixSocketProtocol&) = delete;

  hcomm::ProtocolCaps caps() const override {
    hcomm::ProtocolCaps c;
    c.max_message_bytes = UnixSocketConnection::kMaxMessageBytes;
    c.one_sided = false;
    c.detects_peer_failure = true;  // EOF and ECONNRESET when the peer's process ends
    c.same_host_only = true;
    return c;
  }

  /// Listens on "hcomm-unix-<comm_uid>-<rank>": the address every other rank receives.
  hcomm::Expected<std::string> open(const hcomm::ProtocolContext& context) override {
    context_ = context;
    const std::string name =
        "hcomm-unix-" + std::to_string(context.comm_uid) + "-" + std::to_string(context.rank);
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un addr;
    const socklen_t len = abstract_address(name, &addr);
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listener_, SOMAXCONN) != 0) {
      // NO_DEVICE: hcomm then carries this rank's traffic on another protocol.
      return hcomm::Status{hcomm::HCOMM_ERR_NO_DEVICE,
                           "unix socket '" + name + "': " + std::strerror(errno)};
    }
    return name;
  }

  bool reaches(int /*peer*/, const std::string& peer_host_id,
               const std::string& address) const override {
    return !address.empty() && peer_host_id == context_.host_id;
  }

  /// The lower rank of a pair accepts, the higher one connects and says who it is.
  hcomm::Expected<std::unique_ptr<hcomm::Connection>> connect(int peer, const std::string& address,
                                                              Clock::time_point deadline) override {
    hcomm::Expected<int> fd =
        peer > context_.rank ? accept_from(peer, deadline) : dial(peer, address, deadline);
    if (!fd) return fd.status();
    return std::unique_ptr<hcomm::Connection>(new UnixSocketConnection(*fd));
  }

 private:
  /// The first bytes on a new connection: who connects.
  struct Hello {
    uint64_t comm_uid;
    int64_t rank;
  };

  hcomm::Expected<int> dial(int peer, const std::string& address, Clock::time_point deadline) {
    sockaddr_un addr;
    const socklen_t len = abstract_address(address, &addr);
    for (;;) {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) return socket_error("socket", errno);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
        // The hello fits an empty socket buffer: this send does not come up short.
        const Hello hello{context_.comm_uid, context_.rank};
        if (::send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) == sizeof(hello)) return fd;
      }
      const int err = errno;
      ::close(fd);
      // EAGAIN: the peer's accept backlog is full; it is busy accepting others.
      if (err != EAGAIN && err != ECONNREFUSED && err != ENOENT)
        return socket_error("connecting to rank " + std::to_string(peer) + " at '" + address + "'",
                            err);
      if (Clock::now() >= deadline)
        return hcomm::Status{hcomm::HCOMM_ERR_TIMEOUT,
                             "rank " + std::to_string(peer) + " never accepted on '" + address +
                                 "': is it on this host, in this network namespace?"};
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  hcomm::Expected<int> accept_from(int peer, Clock::time_point deadline) {
    for (;;) {
      // Higher ranks connect in their own order: one may come before the one asked for.
      if (auto it = accepted_.find(peer); it != accepted_.end()) {
        const int fd = it->second;
        accepted_.erase(it);
        return fd;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0)
        return hcomm::Status{hcomm::HCOMM_ERR_TIMEOUT,
                             "rank " + std::to_string(peer) + " did not connect in time"};
      pollfd p{listener_, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;  // nothing yet (EAGAIN), or a connection that gave up
      Hello hello{};
      if (read_hello(fd, &hello, deadline) && hello.comm_uid == context_.comm_uid &&
          hello.rank > context_.rank && hello.rank < context_.world_size &&
          accepted_.count(static_cast<int>(hello.rank)) == 0) {
        accepted_[static_cast<int>(hello.rank)] = fd;
      } else {
        ::close(fd);  // not one of this communicator's ranks
      }
    }
  }

  static bool read_hello(int fd, Hello* hello, Clock::time_point deadline) {
    auto* bytes = reinterpret_cast<char*>(hello);
    size_t got = 0;
    while (got < sizeof(*hello)) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd, POLLIN, 0};
      if (left <= 0) return false;
      ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
      const ssize_t n = ::recv(fd, bytes + got, sizeof(*hello) - got, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
      if (n > 0) got += static_cast<size_t>(n);
    }
    return true;
  }

  hcomm::ProtocolContext context_;
  int listener_ = -1;
  std::map<int, int> accepted_;  // rank -> connection that said hello before it was asked for
};

}  // namespace example
