// The ranks' output on its way to the launcher's stdout and stderr: whole lines, each prefixed
// with its rank ("[3] "), never split or mixed between ranks, and the launcher's own notes. All
// of it runs on the launcher's one thread.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace hcomm::tools::run {

/// Writes all of `data` to `fd`, retrying after EINTR and short writes; false on an error.
bool write_all(int fd, const char* data, size_t size);

/// "hcomm-run: <message>" as one line on the launcher's stderr, written at once so that it never
/// lands inside a rank's line.
void note(const std::string& message);

/// The launcher's stdout or stderr as seen by the ranks. Once a write fails (say the reader of a
/// pipe went away) the rest is dropped: the ranks keep running rather than die of SIGPIPE.
class Sink {
 public:
  explicit Sink(int fd) : fd_(fd) {}
  void write(const std::string& data);

 private:
  int fd_;
  bool broken_ = false;
};

/// One output stream of one rank (the read end of its stdout or stderr pipe), passed on line by
/// line. Each batch of whole lines goes out in one write, so lines never mix between ranks. An
/// unterminated "line" longer than kMaxLineBytes is passed on in pieces, so that a rank writing
/// without newlines cannot make the launcher buffer without bound.
class LineForwarder {
 public:
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  LineForwarder() = default;
  /// Takes ownership of `fd`, which must be non-blocking; `sink` must outlive this.
  LineForwarder(int fd, Sink* sink, std::string prefix)
      : fd_(fd), sink_(sink), prefix_(std::move(prefix)) {}

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }

  /// Reads what is there without blocking. Returns whether there may be more to read now; at EOF
  /// or on an error the pipe is closed and the last unterminated line passed on.
  bool read_once();

  /// Passes on what is readable now, without waiting for EOF: a rank's children may hold the
  /// pipe open long after the rank itself is gone.
  void drain();

  /// Passes on the last unterminated line, ending it so the next line starts clean, and closes.
  void close();

 private:
  void consume(const char* data, size_t size);

  int fd_ = -1;
  Sink* sink_ = nullptr;
  std::string prefix_;
  std::string pending_;  ///< the unterminated tail of what was read
};

}  // namespace hcomm::tools::run
