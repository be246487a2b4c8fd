#include "transport/shm/shared_segment.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hcomm::transport::shm {
namespace {

std::string path_of(const std::string& name) {
  return "/" + name;
}

Status mmap_error(const std::string& name, size_t bytes, int err) {
  if (err == ENOMEM || err == ENOSPC)
    return {HCOMM_ERR_OUT_OF_MEM,
            "cannot allocate " + std::to_string(bytes) + " bytes of shared memory for /dev/shm/" +
                name + ": " + strerror(err) + " (is /dev/shm large enough? see df /dev/shm)"};
  return {HCOMM_ERR_MMAP, "cannot map /dev/shm/" + name + ": " + strerror(err)};
}

}  // namespace

Expected<SharedSegment> SharedSegment::create(const std::string& name, size_t bytes, bool* exists) {
  *exists = false;
  int fd = shm_open(path_of(name).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      *exists = true;
      return Status{HCOMM_ERR_INVALID_ARG, "/dev/shm/" + name + " already exists"};
    }
    return Status{HCOMM_ERR_MMAP, "cannot create /dev/shm/" + name + ": " + strerror(errno)};
  }
  // posix_fallocate reserves the pages now: a full /dev/shm fails here with ENOSPC, not later
  // with SIGBUS on first touch.
  int err = ftruncate(fd, static_cast<off_t>(bytes)) != 0
                ? errno
                : posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  void* p = err == 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (err == 0 && p == MAP_FAILED) err = errno;
  close(fd);
  if (err != 0) {
    shm_unlink(path_of(name).c_str());
    return mmap_error(name, bytes, err);
  }
  return SharedSegment(p, bytes);
}

Expected<SharedSegment> SharedSegment::open(const std::string& name, bool* missing) {
  *missing = false;
  int fd = shm_open(path_of(name).c_str(), O_RDWR, 0600);
  if (fd < 0) {
    *missing = errno == ENOENT;
    return Status{HCOMM_ERR_INVALID_ARG, "cannot open /dev/shm/" + name + ": " + strerror(errno)};
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    int err = errno;
    close(fd);
    *missing = true;  // being created: its size is not set yet
    return Status{HCOMM_ERR_INVALID_ARG, "/dev/shm/" + name + " is not ready" +
                                             (err != 0 ? std::string(": ") + strerror(err) : "")};
  }
  const size_t bytes = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED) return mmap_error(name, bytes, err);
  return SharedSegment(p, bytes);
}

void SharedSegment::prefault(size_t offset, size_t bytes) const {
  auto* begin = static_cast<std::byte*>(data_) + offset;
#ifdef MADV_POPULATE_WRITE
  if (madvise(begin, bytes, MADV_POPULATE_WRITE) == 0) return;
#endif
  // Kernels before 5.14: a read per page maps it (writing is not safe: other processes may be
  // using the pages already).
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t at = 0; at < bytes; at += page)
    (void)*reinterpret_cast<volatile std::byte*>(begin + at);
}

bool SharedSegment::unlink(const std::string& name) {
  return shm_unlink(path_of(name).c_str()) == 0;
}

SharedSegment::SharedSegment(SharedSegment&& other) noexcept
    : data_(other.data_), bytes_(other.bytes_) {
  other.data_ = nullptr;
  other.bytes_ = 0;
}

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, bytes_);
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

SharedSegment::~SharedSegment() {
  if (data_ != nullptr) munmap(data_, bytes_);
}

namespace {

/// Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot; 0 when it
/// is gone or a zombie (dead, not yet reaped by its parent).
uint64_t start_ticks_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  const size_t paren = line.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos || paren + 2 >= line.size()) return 0;
  std::istringstream fields(line.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3 && (field == "Z" || field == "X")) return 0;
    if (i == 22) return std::stoull(field);
  }
  return 0;
}

}  // namespace

ProcessIdentity ProcessIdentity::self() {
  ProcessIdentity p;
  p.pid = static_cast<int>(getpid());
  p.start_ticks = start_ticks_of(p.pid);
  return p;
}

bool ProcessIdentity::alive() const {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  const uint64_t now = start_ticks_of(pid);
  return now != 0 && now == start_ticks;
}

}  // namespace hcomm::transport::shm
