// A shared-memory pair segment whose header and ring-cell bytes come from the input, as the
// attaching rank sees it (transport/shm/link_segment): the first 8 bytes are XORed into the
// header's cell count and cell size, the next 8 are the ring's tail, the rest fills the ring's
// cell header slots (64 bytes each) and then its first cell. attach() must refuse any other
// layout; an accepted segment's cells are read within the mapping for any sequence number.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "transport/shm/link_segment.hpp"

using namespace hcomm::transport;
using namespace hcomm::transport::shm;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 16) return 0;
  const uint64_t uid = 0xf0220000000000ull + static_cast<uint64_t>(getpid());
  const std::string name = LinkSegment::name_for(uid, 0, 1);
  auto created = LinkSegment::create(name, uid);
  check(created.ok());
  LinkSegment& mine = created.value();
  uint32_t mask[2];
  std::memcpy(mask, data, sizeof(mask));
  mine.header().cells ^= mask[0];
  mine.header().cell_bytes ^= mask[1];
  uint64_t tail = 0;
  std::memcpy(&tail, data + 8, sizeof(tail));
  mine.control(1).tail.store(tail);
  size_t at = 16;
  for (uint64_t seq = 0; seq < LinkSegment::kCells && at + sizeof(FrameHeader) <= size; ++seq) {
    std::memcpy(&mine.cell_header(1, seq), data + at, sizeof(FrameHeader));
    at += sizeof(FrameHeader);
  }
  std::memcpy(mine.cell_data(1, 0), data + at, std::min(size - at, LinkSegment::kCellBytes));

  bool not_yet = false;
  auto attached = LinkSegment::attach(name, uid, &not_yet);
  check(attached.ok() == (mask[0] == 0 && mask[1] == 0));
  if (!attached.ok()) {
    (void)unlink(("/dev/shm/" + name).c_str());
    return 0;
  }
  const LinkSegment& peer = attached.value();
  const auto* begin = reinterpret_cast<const std::byte*>(&peer.header());
  const uint64_t seen = peer.control(1).tail.load();
  for (uint64_t seq = seen - 2; seq != seen + 2; ++seq) {
    const auto* h = reinterpret_cast<const std::byte*>(&peer.cell_header(1, seq));
    const std::byte* cell = peer.cell_data(1, seq);
    check(h > begin && cell > h);
    FrameHeader copy;
    std::memcpy(&copy, h, sizeof(copy));
    volatile std::byte last = cell[LinkSegment::kCellBytes - 1];  // the cell lies in the mapping
    (void)last;
  }
  return 0;
}
