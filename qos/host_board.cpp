#include "qos/host_board.hpp"

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace hcomm::qos {

struct HostBoard::Slot {
  std::atomic<uint32_t> state;  // kFree, kClaiming, kLive
  int32_t pid;
  uint64_t start_ticks;
  uint64_t comm;
  std::atomic<int32_t> min_rate;
  std::atomic<int32_t> max_rate;
  std::atomic<int32_t> priority;
  std::atomic<int32_t> on_fallback;
  std::atomic<int64_t> active_until_ns;
  std::atomic<int64_t> backlogged_until_ns;
  std::atomic<uint64_t> bytes_sent;
};

struct HostBoard::Layout {
  static constexpr uint64_t kMagic = 0x3142514f534d4348ull;  // "HCMSOQB1"
  std::atomic<uint64_t> magic;
  Slot slots[kSlots];
};

namespace {
enum : uint32_t { kFree = 0, kClaiming = 1, kLive = 2 };
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

HostBoard::HostBoard(transport::shm::SharedSegment segment, std::string name)
    : segment_(std::move(segment)), name_(std::move(name)) {}

HostBoard::Layout& HostBoard::layout() const {
  return *static_cast<Layout*>(segment_.data());
}

Expected<std::shared_ptr<HostBoard>> HostBoard::get(const std::string& host_id) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(std::hash<std::string>()(host_id)));
  // The layout's version is in the name: a board left by an older hcomm is not misread.
  const std::string kName = std::string("hcomm-qos2-") + hex;
  Status last;
  // Created zeroed (every slot free); another process may be between its create and its
  // ftruncate, hence a few tries.
  for (int attempt = 0; attempt < 50; ++attempt) {
    bool exists = false;
    auto created = transport::shm::SharedSegment::create(kName, sizeof(Layout), &exists);
    if (created.ok()) {
      auto board = std::make_shared<HostBoard>(std::move(created.value()), kName);
      board->layout().magic.store(Layout::kMagic, std::memory_order_release);
      return board;
    }
    bool missing = false;
    auto opened = transport::shm::SharedSegment::open(kName, &missing);
    if (opened.ok() && opened.value().bytes() >= sizeof(Layout)) {
      auto board = std::make_shared<HostBoard>(std::move(opened.value()), kName);
      if (board->layout().magic.load(std::memory_order_acquire) == Layout::kMagic) return board;
    }
    last =
        opened.ok() ? Status{HCOMM_ERR_INTERNAL, "the board is not initialized"} : opened.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return Status{last.code(), "the host's QoS board /dev/shm/" + kName + ": " + last.message() +
                                 " (remove it if no hcomm process runs)"};
}

Status HostBoard::check_sum(uint64_t comm, const QosClass& qos) {
  int sum = qos.min_rate;
  std::set<uint64_t> counted{comm};  // a communicator's ranks on this host are one tenant
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = layout().slots[i];
    if (s.state.load(std::memory_order_acquire) != kLive || !counted.insert(s.comm).second)
      continue;
    sum += s.min_rate.load(std::memory_order_relaxed);
  }
  if (sum <= 100) return {};
  return {HCOMM_ERR_INVALID_ARG,
          "QoS class " + qos.to_string() + ": the minimum shares of the communicators on this " +
              "host would add up to " + std::to_string(sum) +
              "% (more than 100%): lower a min, or end a communicator first"};
}

Expected<int> HostBoard::claim(uint64_t comm, const QosClass& qos) {
  read(steady_ns());  // frees the slots of dead processes first
  Status st = check_sum(comm, qos);
  if (!st.ok()) return st;
  const auto self = transport::shm::ProcessIdentity::self();
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = layout().slots[i];
    uint32_t free = kFree;
    if (!s.state.compare_exchange_strong(free, kClaiming, std::memory_order_acq_rel)) continue;
    s.pid = self.pid;
    s.start_ticks = self.start_ticks;
    s.comm = comm;
    s.min_rate.store(qos.min_rate);
    s.max_rate.store(qos.max_rate);
    s.priority.store(qos.priority);
    s.on_fallback.store(0);
    s.active_until_ns.store(0);
    s.backlogged_until_ns.store(0);
    s.bytes_sent.store(0);
    s.state.store(kLive, std::memory_order_release);
    return i;
  }
  return Status{HCOMM_ERR_OUT_OF_MEM, "the host's QoS board /dev/shm/" + name_ + " is full (" +
                                          std::to_string(kSlots) +
                                          " communicators with QoS on this host)"};
}

Status HostBoard::update(int slot, const QosClass& qos) {
  Status st = check_sum(layout().slots[slot].comm, qos);
  if (!st.ok()) return st;
  Slot& s = layout().slots[slot];
  s.min_rate.store(qos.min_rate);
  s.max_rate.store(qos.max_rate);
  s.priority.store(qos.priority);
  return {};
}

void HostBoard::release(int slot) {
  layout().slots[slot].state.store(kFree, std::memory_order_release);
  // The last communicator with QoS on this host removes the board: each host (network
  // namespace) would leave one behind otherwise. One that claims a slot right now keeps its
  // mapping and is alone on it until its communicator ends (a small window, not a fault).
  for (int i = 0; i < kSlots; ++i)
    if (layout().slots[i].state.load(std::memory_order_acquire) != kFree) return;
  transport::shm::SharedSegment::unlink(name_);
}

void HostBoard::note(int slot, uint64_t bytes, int64_t active_until_ns, bool backlogged) {
  Slot& s = layout().slots[slot];
  if (bytes > 0) s.bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
  s.active_until_ns.store(active_until_ns, std::memory_order_relaxed);
  if (backlogged) s.backlogged_until_ns.store(active_until_ns, std::memory_order_relaxed);
}

void HostBoard::set_on_fallback(int slot, bool on_fallback) {
  layout().slots[slot].on_fallback.store(on_fallback ? 1 : 0);
}

std::vector<HostBoard::Entry> HostBoard::read(int64_t now_ns) {
  std::vector<Entry> out;
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = layout().slots[i];
    if (s.state.load(std::memory_order_acquire) != kLive) continue;
    if (!transport::shm::ProcessIdentity{s.pid, s.start_ticks}.alive()) {
      uint32_t live = kLive;
      s.state.compare_exchange_strong(live, kFree, std::memory_order_acq_rel);
      continue;
    }
    Entry e;
    e.slot = i;
    e.comm = s.comm;
    e.qos.min_rate = s.min_rate.load(std::memory_order_relaxed);
    e.qos.max_rate = s.max_rate.load(std::memory_order_relaxed);
    e.qos.priority = s.priority.load(std::memory_order_relaxed);
    e.active = s.active_until_ns.load(std::memory_order_relaxed) > now_ns;
    e.backlogged = s.backlogged_until_ns.load(std::memory_order_relaxed) > now_ns;
    e.bytes_sent = s.bytes_sent.load(std::memory_order_relaxed);
    e.on_fallback = s.on_fallback.load(std::memory_order_relaxed) != 0;
    out.push_back(e);
  }
  return out;
}

}  // namespace hcomm::qos
