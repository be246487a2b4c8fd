#include "run/preflight.hpp"

#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "run/output.hpp"

namespace hcomm::tools::run {

int check_program(const std::string& prog) {
  auto check = [](const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    return access(path.c_str(), X_OK) == 0 ? 0 : errno;
  };
  if (prog.empty()) return ENOENT;
  if (prog.find('/') != std::string::npos) return check(prog);

  const char* path_env = std::getenv("PATH");
  std::string dirs = path_env ? path_env : "/bin:/usr/bin";
  int result = ENOENT;
  for (size_t start = 0;;) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? colon : colon - start);
    int err = check((dir.empty() ? "." : dir) + "/" + prog);
    if (err == 0) return 0;
    // Like execvp: a candidate that exists but cannot run beats "not found".
    if (err != ENOENT && err != ENOTDIR) result = err;
    if (colon == std::string::npos) return result;
    start = colon + 1;
  }
}

namespace {

// The first port of the kernel's ephemeral range (connect() and bind(0) pick from it).
int ephemeral_low() {
  int low = 32768, high = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d %d", &low, &high) != 2) low = 32768;
    std::fclose(f);
  }
  return low;
}

// Whether port can be bound on every address right now (what a TCP store does).
bool can_bind(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  const int err = errno;
  close(fd);
  errno = err;
  return ok;
}

}  // namespace

std::optional<int> find_free_port() {
  const int high = ephemeral_low() - 2;
  const int low = std::min(20000, high - 1000);
  if (high - low < 2) {
    errno = EADDRNOTAVAIL;
    return std::nullopt;
  }
  std::random_device seed;
  std::mt19937 pick(seed());
  std::uniform_int_distribution<int> port_of(low, high);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = port_of(pick);
    if (can_bind(port) && can_bind(port + 1)) return port;
  }
  errno = EADDRINUSE;
  return std::nullopt;
}

std::vector<int> rank_cpus(int ranks, std::optional<bool> bind_to_core) {
  // Ranks that busy poll must not share a core while another idles: the scheduler does not
  // always spread them.
  cpu_set_t allowed;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  const bool enough = cpus.size() >= static_cast<size_t>(ranks);
  std::vector<int> out;
  if (!bind_to_core.value_or(enough)) return out;
  if (enough) return std::vector<int>(cpus.begin(), cpus.begin() + ranks);
  note("--bind-to core: " + std::to_string(ranks) + " ranks but only " +
       std::to_string(cpus.size()) + " CPUs; ranks share them round robin");
  for (int r = 0; !cpus.empty() && r < ranks; ++r)
    out.push_back(cpus[static_cast<size_t>(r) % cpus.size()]);
  return out;
}

}  // namespace hcomm::tools::run
