#include "topology/host_identity.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "core/config_vars.hpp"

namespace hcomm::topology {
namespace {

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id.empty() ? "unknown-boot" : id;
}

/// The inode of /proc/self/ns/<ns>: equal for processes in the same namespace.
std::string namespace_inode(const char* ns) {
  struct stat st {};
  std::string path = std::string("/proc/self/ns/") + ns;
  if (stat(path.c_str(), &st) != 0) return "?";
  return std::to_string(static_cast<unsigned long long>(st.st_ino));
}

/// The file system behind /dev/shm (device and inode): processes that see the same one can map
/// each other's segments, whatever their mount namespaces (`ip netns exec` makes a new one and
/// keeps /dev/shm).
std::string shm_filesystem() {
  struct stat st {};
  if (stat("/dev/shm", &st) != 0) return "?";
  return std::to_string(static_cast<unsigned long long>(st.st_dev)) + "." +
         std::to_string(static_cast<unsigned long long>(st.st_ino));
}

}  // namespace

HostIdentity this_host() {
  HostIdentity h;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) h.name = name;
  if (auto forced = core::env_text(core::Var::host_id)) {
    h.id = *forced;
  } else {
    // The pid namespace too: liveness checks (and the reaper) look processes up by pid.
    h.id = boot_id() + "/net:" + namespace_inode("net") + "/ipc:" + namespace_inode("ipc") +
           "/pid:" + namespace_inode("pid") + "/shm:" + shm_filesystem();
  }
  if (h.name.empty()) h.name = h.id;
  return h;
}

}  // namespace hcomm::topology
