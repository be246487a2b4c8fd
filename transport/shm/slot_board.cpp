#include "transport/shm/slot_board.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>

namespace hcomm::transport::shm {
namespace {

// Layout: LinkSegmentHeader | BoardHeader (ranks' identities) | per rank: SlotProgress, then
// kDepth x (SlotHeader, data) | per rank: StageFlags | (page-aligned) per rank: staging area.
// The staging areas exist on staged() boards only; tmpfs gives them pages once written.
constexpr size_t kBoardHeaderOffset = 512;

struct BoardHeader {
  int32_t size = 0;
  std::atomic<int32_t> attached{0};
  /// The first rank that aborted the communicator (-1: none); its reason is written first.
  alignas(64) std::atomic<int32_t> aborted_by{-1};
  std::atomic<int32_t> abort_claimed{0};  ///< a rank is writing its reason
  char abort_reason[SlotBoard::kAbortReasonBytes] = {};
  ProcessIdentity ranks[SlotBoard::kMaxRanks];
};

constexpr size_t kHeaderBytes = (kBoardHeaderOffset + sizeof(BoardHeader) + 4095) / 4096 * 4096;
constexpr size_t kSlotStride = (sizeof(SlotHeader) + SlotBoard::kSlotBytes + 63) / 64 * 64;
static_assert(sizeof(SlotHeader) <= 40, "a slot's first data bytes share its header's line");
constexpr size_t kRankStride = 64 + SlotBoard::kDepth * kSlotStride;

constexpr size_t kPage = 4096;

size_t stage_flags_offset(int size) {
  return kHeaderBytes + static_cast<size_t>(size) * kRankStride;
}

size_t staging_offset(int size) {
  const size_t end = stage_flags_offset(size) + static_cast<size_t>(size) * sizeof(StageFlags);
  return (end + kPage - 1) / kPage * kPage;
}

size_t board_bytes(int size) {
  if (!SlotBoard::staged(size)) return stage_flags_offset(size);
  return staging_offset(size) + static_cast<size_t>(size) * SlotBoard::kStageBytes;
}

std::string board_name(uint64_t uid) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "hcomm-seg-%016" PRIx64 "-board", uid);
  return buf;
}

BoardHeader& board_header(void* base) {
  return *reinterpret_cast<BoardHeader*>(static_cast<std::byte*>(base) + kBoardHeaderOffset);
}

}  // namespace

Expected<SlotBoard> SlotBoard::establish(uint64_t comm_uid, int rank, int size,
                                         std::chrono::steady_clock::time_point deadline) {
  if (size > kMaxRanks) return Status{HCOMM_ERR_INVALID_ARG, "slot boards hold at most 256 ranks"};
  const std::string name = board_name(comm_uid);
  const size_t bytes = board_bytes(size);
  SlotBoard board;
  board.size_ = size;
  if (rank == 0) {
    bool exists = false;
    auto mem = SharedSegment::create(name, bytes, &exists);
    if (!mem.ok()) return mem.status();
    board.mem_ = std::move(mem.value());
    auto* h = new (board.mem_.data()) LinkSegmentHeader();
    auto* b = new (&board_header(board.mem_.data())) BoardHeader();
    b->size = size;
    b->ranks[0] = ProcessIdentity::self();
    for (int r = 0; r < size; ++r) {
      new (&board.progress(r)) SlotProgress();
      for (uint32_t d = 0; d < kDepth; ++d) new (&board.slot(r, d)) SlotHeader();
      if (board.staged()) new (&board.stage_flags(r)) StageFlags();
    }
    h->comm_uid = comm_uid;
    h->cells = kDepth;
    h->cell_bytes = static_cast<uint32_t>(kSlotBytes);
    h->creator = b->ranks[0];
    h->magic = LinkSegmentHeader::kMagic;
    h->state.store(LinkSegmentHeader::kReady, std::memory_order_release);
    if (size == 1) SharedSegment::unlink(name);
    board.prefault_staging();
    return board;
  }
  for (;;) {
    bool missing = false;
    auto mem = SharedSegment::open(name, &missing);
    if (mem.ok() && mem->bytes() == bytes &&
        static_cast<LinkSegmentHeader*>(mem->data())->state.load(std::memory_order_acquire) ==
            LinkSegmentHeader::kReady) {
      board.mem_ = std::move(mem.value());
      break;
    }
    if (mem.ok() && mem->bytes() != bytes && mem->bytes() != 0)
      return Status{HCOMM_ERR_INTERNAL, "/dev/shm/" + name +
                                            " has another size: ranks of one "
                                            "job run different hcomm builds"};
    if (!mem.ok() && !missing) return mem.status();
    if (std::chrono::steady_clock::now() >= deadline)
      return Status{HCOMM_ERR_TIMEOUT, "rank 0 never created /dev/shm/" + name};
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  auto& h = *static_cast<LinkSegmentHeader*>(board.mem_.data());
  auto& b = board_header(board.mem_.data());
  b.ranks[rank] = ProcessIdentity::self();
  if (b.attached.fetch_add(1) + 1 == size - 1) {
    h.attacher = b.ranks[rank];
    h.state.store(LinkSegmentHeader::kAttached, std::memory_order_release);
    SharedSegment::unlink(name);  // everyone has it mapped
  }
  board.prefault_staging();
  return board;
}

SlotHeader& SlotBoard::slot(int rank, uint64_t seq) const {
  auto* base = static_cast<std::byte*>(mem_.data()) + kHeaderBytes +
               static_cast<size_t>(rank) * kRankStride + 64 + (seq % kDepth) * kSlotStride;
  return *reinterpret_cast<SlotHeader*>(base);
}

std::byte* SlotBoard::slot_data(int rank, uint64_t seq) const {
  return reinterpret_cast<std::byte*>(&slot(rank, seq)) + sizeof(SlotHeader);
}

SlotProgress& SlotBoard::progress(int rank) const {
  auto* base =
      static_cast<std::byte*>(mem_.data()) + kHeaderBytes + static_cast<size_t>(rank) * kRankStride;
  return *reinterpret_cast<SlotProgress*>(base);
}

void SlotBoard::prefault_staging() const {
  if (staged()) mem_.prefault(staging_offset(size_), static_cast<size_t>(size_) * kStageBytes);
}

size_t SlotBoard::stage_part_bytes() const {
  return kStageBytes / (kStageSteps * static_cast<size_t>(size_)) / kPage * kPage;
}

StageFlags& SlotBoard::stage_flags(int rank) const {
  auto* base = static_cast<std::byte*>(mem_.data()) + stage_flags_offset(size_) +
               static_cast<size_t>(rank) * sizeof(StageFlags);
  return *reinterpret_cast<StageFlags*>(base);
}

std::byte* SlotBoard::stage_at(int rank, uint64_t position) const {
  return static_cast<std::byte*>(mem_.data()) + staging_offset(size_) +
         static_cast<size_t>(rank) * kStageBytes + position % kStageBytes;
}

ProcessIdentity SlotBoard::process(int rank) const {
  return board_header(mem_.data()).ranks[rank];
}

void SlotBoard::post_abort(int rank, const std::string& reason) const {
  BoardHeader& h = board_header(mem_.data());
  int32_t unclaimed = 0;
  if (!h.abort_claimed.compare_exchange_strong(unclaimed, 1)) return;  // the first one stands
  const size_t n = std::min(reason.size(), kAbortReasonBytes - 1);
  std::memcpy(h.abort_reason, reason.data(), n);
  h.abort_reason[n] = '\0';
  h.aborted_by.store(rank, std::memory_order_release);
}

std::optional<std::pair<int, std::string>> SlotBoard::abort_notice() const {
  const BoardHeader& h = board_header(mem_.data());
  const int32_t by = h.aborted_by.load(std::memory_order_acquire);
  if (by < 0) return std::nullopt;
  return std::make_pair(static_cast<int>(by), std::string(h.abort_reason));
}

}  // namespace hcomm::transport::shm
