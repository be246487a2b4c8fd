#include "run/output.hpp"

#include <unistd.h>

#include <cerrno>

namespace hcomm::tools::run {

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void note(const std::string& message) {
  std::string line = "hcomm-run: " + message + "\n";
  write_all(STDERR_FILENO, line.data(), line.size());
}

void Sink::write(const std::string& data) {
  if (!broken_ && !data.empty() && !write_all(fd_, data.data(), data.size())) broken_ = true;
}

bool LineForwarder::read_once() {
  if (fd_ < 0) return false;
  char buf[64 * 1024];
  ssize_t n = read(fd_, buf, sizeof(buf));
  if (n > 0) {
    consume(buf, static_cast<size_t>(n));
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  close();
  return false;
}

void LineForwarder::drain() {
  while (read_once()) {
  }
}

void LineForwarder::close() {
  if (!pending_.empty()) sink_->write(prefix_ + pending_ + "\n");
  pending_.clear();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void LineForwarder::consume(const char* data, size_t size) {
  pending_.append(data, size);
  std::string out;
  size_t start = 0;
  for (size_t newline; (newline = pending_.find('\n', start)) != std::string::npos;) {
    out += prefix_;
    out.append(pending_, start, newline + 1 - start);
    start = newline + 1;
  }
  pending_.erase(0, start);
  if (pending_.size() >= kMaxLineBytes) {
    out += prefix_ + pending_ + "\n";
    pending_.clear();
  }
  sink_->write(out);
}

}  // namespace hcomm::tools::run
