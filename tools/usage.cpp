#include "usage.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "bootstrap/launch_env.hpp"

namespace hcomm::tools {
namespace {

bool prints() {
  return !kProgram.runs_as_rank || is_lead_rank();
}

// Unbuffered, and in one write(2) unless the descriptor takes less: a line from several ranks
// or threads does not land inside another's.
void write_whole(int fd, const std::string& text) {
  const char* data = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

bool is_lead_rank() {
  auto env = bootstrap::read_launch_env();
  return !env.ok() || env->rank <= 0;
}

void usage_error(const std::string& message) {
  if (prints())
    write_whole(STDERR_FILENO, std::string(kProgram.name) + ": " + message + " (-h for help)\n");
  std::exit(kExitUsage);
}

void print_help(const std::string& text) {
  if (prints()) {
    std::fflush(stdout);
    write_whole(STDOUT_FILENO, text);
  }
  std::exit(0);
}

}  // namespace hcomm::tools
