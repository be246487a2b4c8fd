#include "transport/shm/link_segment.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>

namespace hcomm::transport::shm {
namespace {

constexpr const char* kPrefix = "hcomm-seg-";
constexpr size_t kHeaderArea = 4096;
constexpr size_t kControlArea = 8192;  // RingControl, then the cell header slots
constexpr size_t kSlotsOffset = 256;
constexpr size_t kRingBytes = kControlArea + LinkSegment::kCells * LinkSegment::kCellBytes;
constexpr size_t kSegmentBytes = kHeaderArea + 2 * kRingBytes;
constexpr time_t kStaleCreatingSeconds = 60;

static_assert(sizeof(LinkSegmentHeader) <= kHeaderArea, "header fits its area");
static_assert(sizeof(RingControl) <= kSlotsOffset, "ring control fits before the slots");
static_assert(kSlotsOffset + LinkSegment::kCells * sizeof(FrameHeader) <= kControlArea,
              "cell header slots fit the control area");

}  // namespace

std::string LinkSegment::name_for(uint64_t comm_uid, int lo, int hi) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%s%016" PRIx64 "-%d-%d", kPrefix, comm_uid, lo, hi);
  return buf;
}

Expected<LinkSegment> LinkSegment::create(const std::string& name, uint64_t comm_uid) {
  bool exists = false;
  auto mem = SharedSegment::create(name, kSegmentBytes, &exists);
  if (!mem.ok() && exists) {
    // Only a dead run can hold this name (the uid is fresh per communicator): reap and retry.
    reap_dead_segments();
    mem = SharedSegment::create(name, kSegmentBytes, &exists);
  }
  if (!mem.ok()) return mem.status();
  LinkSegment seg(std::move(mem.value()));
  auto* h = new (seg.mem_.data()) LinkSegmentHeader();
  h->comm_uid = comm_uid;
  h->cells = kCells;
  h->cell_bytes = static_cast<uint32_t>(kCellBytes);
  h->creator = ProcessIdentity::self();
  for (int r = 0; r < 2; ++r) new (&seg.control(r)) RingControl();
  h->magic = LinkSegmentHeader::kMagic;
  h->state.store(LinkSegmentHeader::kReady, std::memory_order_release);
  return seg;
}

Expected<LinkSegment> LinkSegment::attach(const std::string& name, uint64_t comm_uid,
                                          bool* not_yet) {
  auto mem = SharedSegment::open(name, not_yet);
  if (!mem.ok()) return mem.status();
  LinkSegment seg(std::move(mem.value()));
  if (seg.mem_.bytes() != kSegmentBytes) {
    *not_yet = seg.mem_.bytes() == 0;
    return Status{HCOMM_ERR_INTERNAL, "/dev/shm/" + name + " has " +
                                          std::to_string(seg.mem_.bytes()) + " bytes, expected " +
                                          std::to_string(kSegmentBytes) +
                                          ": ranks of one job run different hcomm builds"};
  }
  auto& h = seg.header();
  if (h.state.load(std::memory_order_acquire) != LinkSegmentHeader::kReady) {
    *not_yet = true;
    return Status{HCOMM_ERR_INVALID_ARG, "/dev/shm/" + name + " is not ready"};
  }
  if (h.magic != LinkSegmentHeader::kMagic || h.comm_uid != comm_uid || h.cells != kCells ||
      h.cell_bytes != kCellBytes)
    return Status{HCOMM_ERR_INTERNAL, "/dev/shm/" + name +
                                          " has another layout: ranks of one job run different "
                                          "hcomm builds"};
  h.attacher = ProcessIdentity::self();
  h.state.store(LinkSegmentHeader::kAttached, std::memory_order_release);
  SharedSegment::unlink(name);  // both sides have it mapped: nothing can leak any more
  return seg;
}

std::byte* LinkSegment::ring_base(int ring) const {
  return static_cast<std::byte*>(mem_.data()) + kHeaderArea + ring * kRingBytes;
}

RingControl& LinkSegment::control(int ring) const {
  return *reinterpret_cast<RingControl*>(ring_base(ring));
}

FrameHeader& LinkSegment::cell_header(int ring, uint64_t seq) const {
  return reinterpret_cast<FrameHeader*>(ring_base(ring) + kSlotsOffset)[seq % kCells];
}

std::byte* LinkSegment::cell_data(int ring, uint64_t seq) const {
  return ring_base(ring) + kControlArea + (seq % kCells) * kCellBytes;
}

int reap_dead_segments() {
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return 0;
  int reaped = 0;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.compare(0, std::strlen(kPrefix), kPrefix) != 0) continue;
    bool missing = false;
    auto mem = SharedSegment::open(name, &missing);
    if (!mem.ok() || mem->bytes() < sizeof(LinkSegmentHeader)) continue;
    const auto& h = *static_cast<const LinkSegmentHeader*>(mem->data());
    // A segment still being initialised has no identity yet: leave it, unless it has been so
    // for longer than any creation takes (its creator died half way).
    if (h.state.load(std::memory_order_acquire) == LinkSegmentHeader::kCreating) {
      struct stat st {};
      const std::string path = "/dev/shm/" + name;
      if (stat(path.c_str(), &st) != 0 || time(nullptr) - st.st_mtime < kStaleCreatingSeconds)
        continue;
    } else if (h.creator.alive() || h.attacher.alive()) {
      continue;
    }
    if (SharedSegment::unlink(name)) ++reaped;
  }
  closedir(dir);
  return reaped;
}

}  // namespace hcomm::transport::shm
