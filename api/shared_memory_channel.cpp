// SharedMemoryChannel: one segment holding a header and two buffers. The writer fills the buffer
// readers are not directed to, then flips `active`; `seq` (odd while a write is in progress)
// lets a reader check that the buffer it copied was not refilled meanwhile, which takes two more
// writes (seqlock over a double buffer: readers never block the writer, and retry only when
// the writer laps them). New versions bump a futex word that waiting readers sleep on.
#include "hcomm/shared_memory_channel.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <cstring>
#include <thread>

#include "core/futex.hpp"
#include "transport/shm/shared_segment.hpp"

namespace hcomm {
namespace {

using transport::shm::ProcessIdentity;
using transport::shm::SharedSegment;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMagic = 0x3148434d4f434843ull;  // "HCOCMCH1"
constexpr size_t kDataOffset = 4096;
constexpr size_t kMaxSize = size_t{1} << 40;
// A reader waiting for a version looks at the writer's liveness this often (a dead writer
// wakes nobody).
constexpr auto kLivenessCheck = std::chrono::milliseconds(100);

struct Header {
  uint64_t magic;
  uint64_t capacity;  // bytes per version
  int32_t writer_pid;
  uint32_t unused;
  uint64_t writer_start_ticks;
  std::atomic<uint32_t> ready;   // 1 once the writer initialised the header
  std::atomic<uint32_t> closed;  // 1 once the writer closed the channel
  std::atomic<uint32_t> notify;  // futex word: bumped on every version and on close
  std::atomic<uint32_t> active;  // the buffer holding the newest version
  std::atomic<uint64_t> seq;     // odd while the writer fills the inactive buffer
  std::atomic<uint64_t> version[2];
  std::atomic<uint64_t> length[2];
};
static_assert(sizeof(Header) <= kDataOffset, "header fits before the data");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared atomics must be lock-free");

size_t buffer_stride(size_t capacity) {
  return (capacity + 4095) / 4096 * 4096;
}

std::string segment_name(const std::string& name) {
  return "hcomm-channel-" + name;
}

Status check_name(const std::string& name) {
  if (name.empty() || name.size() > 200)
    return {HCOMM_ERR_INVALID_ARG, "SharedMemoryChannel: the name must have 1 to 200 characters"};
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return {HCOMM_ERR_INVALID_ARG, "SharedMemoryChannel: name '" + name +
                                         "' may hold only letters, digits, '.', '_' and '-'"};
  return {};
}

}  // namespace

struct SharedMemoryChannel::State {
  std::string name;
  SharedSegment segment;
  bool writer = false;
  uint64_t published = 0;

  Header& header() const { return *static_cast<Header*>(segment.data()); }
  std::byte* buffer(uint32_t i) const {
    return static_cast<std::byte*>(segment.data()) + kDataOffset +
           i * buffer_stride(header().capacity);
  }
  ProcessIdentity writer_identity() const {
    return {header().writer_pid, header().writer_start_ticks};
  }
};

SharedMemoryChannel::SharedMemoryChannel(std::unique_ptr<State> state) : state_(std::move(state)) {}

Expected<std::unique_ptr<SharedMemoryChannel>> SharedMemoryChannel::create(const std::string& name,
                                                                           size_t size) {
  if (Status st = check_name(name); !st.ok()) return st;
  if (size == 0 || size > kMaxSize)
    return Status{HCOMM_ERR_INVALID_ARG, "SharedMemoryChannel '" + name + "': size " +
                                             std::to_string(size) + " is not in [1, 2^40]"};
  const std::string seg = segment_name(name);
  const size_t total = kDataOffset + 2 * buffer_stride(size);
  for (int attempt = 0;; ++attempt) {
    bool exists = false;
    auto created = SharedSegment::create(seg, total, &exists);
    if (created.ok()) {
      auto state = std::make_unique<State>();
      state->name = name;
      state->segment = std::move(created.value());
      state->writer = true;
      Header& h = state->header();
      const ProcessIdentity me = ProcessIdentity::self();
      h.magic = kMagic;
      h.capacity = size;
      h.writer_pid = me.pid;
      h.writer_start_ticks = me.start_ticks;
      h.ready.store(1, std::memory_order_release);
      return std::unique_ptr<SharedMemoryChannel>(new SharedMemoryChannel(std::move(state)));
    }
    if (!exists || attempt > 0) return created.status();
    // The name is taken: by a live writer (an error), or left by one that died (reclaimed).
    bool missing = false;
    auto old = SharedSegment::open(seg, &missing);
    if (old.ok() && old->bytes() >= sizeof(Header)) {
      const Header& h = *static_cast<const Header*>(old->data());
      const ProcessIdentity writer{h.writer_pid, h.writer_start_ticks};
      if (h.magic == kMagic && h.closed.load() == 0 && writer.alive())
        return Status{HCOMM_ERR_INVALID_ARG, "SharedMemoryChannel '" + name +
                                                 "' is already written by process " +
                                                 std::to_string(writer.pid) +
                                                 ": a channel has one writer (open() it to read)"};
    }
    SharedSegment::unlink(seg);
  }
}

Expected<std::unique_ptr<SharedMemoryChannel>> SharedMemoryChannel::open(
    const std::string& name, size_t size, std::chrono::milliseconds timeout) {
  if (Status st = check_name(name); !st.ok()) return st;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    bool missing = false;
    auto seg = SharedSegment::open(segment_name(name), &missing);
    if (seg.ok() && seg->bytes() >= kDataOffset) {
      const Header& h = *static_cast<const Header*>(seg->data());
      if (h.ready.load(std::memory_order_acquire) == 1) {
        if (h.magic != kMagic)
          return Status{HCOMM_ERR_INVALID_ARG, "/dev/shm/" + segment_name(name) +
                                                   " is not an hcomm channel (or of another "
                                                   "hcomm version)"};
        if (size != 0 && h.capacity != size)
          return Status{HCOMM_ERR_INVALID_ARG,
                        "SharedMemoryChannel '" + name + "' holds " + std::to_string(h.capacity) +
                            " bytes, this process asked for " + std::to_string(size) +
                            " (pass the writer's size, or 0 to accept it)"};
        auto state = std::make_unique<State>();
        state->name = name;
        state->segment = std::move(seg.value());
        return std::unique_ptr<SharedMemoryChannel>(new SharedMemoryChannel(std::move(state)));
      }
    } else if (!seg.ok() && !missing) {
      return seg.status();
    }
    if (Clock::now() >= deadline)
      return Status{
          HCOMM_ERR_TIMEOUT,
          "no SharedMemoryChannel named '" + name + "'" +
              (timeout.count() > 0 ? " appeared within " + std::to_string(timeout.count()) + " ms"
                                   : "") +
              ": create() it in the writer first, or pass open() a timeout"};
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Status SharedMemoryChannel::write(const void* data, size_t bytes) {
  State& st = *state_;
  if (!st.writer)
    return {HCOMM_ERR_INVALID_ARG,
            "SharedMemoryChannel '" + st.name + "': write() on a reader (only create() writes)"};
  Header& h = st.header();
  if (bytes > h.capacity)
    return {HCOMM_ERR_INVALID_ARG, "SharedMemoryChannel '" + st.name +
                                       "': " + std::to_string(bytes) + " bytes do not fit its " +
                                       std::to_string(h.capacity)};
  if (bytes > 0 && data == nullptr)
    return {HCOMM_ERR_INVALID_ARG, "SharedMemoryChannel '" + st.name + "': null data"};
  const uint32_t next = 1 - h.active.load(std::memory_order_relaxed);
  h.seq.fetch_add(1, std::memory_order_acq_rel);  // odd: filling `next`
  std::atomic_thread_fence(std::memory_order_release);
  if (bytes > 0) std::memcpy(st.buffer(next), data, bytes);
  h.length[next].store(bytes, std::memory_order_relaxed);
  h.version[next].store(++st.published, std::memory_order_relaxed);
  h.active.store(next, std::memory_order_release);
  h.seq.fetch_add(1, std::memory_order_acq_rel);  // even: stable
  h.notify.fetch_add(1, std::memory_order_release);
  core::futex_wake(&h.notify, INT_MAX, core::FutexScope::shared);
  return {};
}

Expected<uint64_t> SharedMemoryChannel::read(std::vector<std::byte>& out, uint64_t newer_than,
                                             std::chrono::milliseconds timeout) {
  State& st = *state_;
  Header& h = st.header();
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const uint32_t seen = h.notify.load(std::memory_order_acquire);
    const uint64_t s1 = h.seq.load(std::memory_order_acquire);
    const uint32_t i = h.active.load(std::memory_order_acquire);
    const uint64_t version = h.version[i].load(std::memory_order_acquire);
    if (version > newer_than) {
      const size_t len = h.length[i].load(std::memory_order_acquire);
      out.resize(len);
      if (len > 0) std::memcpy(out.data(), st.buffer(i), len);
      std::atomic_thread_fence(std::memory_order_acquire);
      const uint64_t s2 = h.seq.load(std::memory_order_acquire);
      // Buffer i is refilled only by the write after the next one (see the file comment).
      if (s2 - s1 <= (s1 % 2 == 0 ? 2u : 1u)) return version;
      continue;  // lapped by the writer: read again
    }
    if (h.closed.load(std::memory_order_acquire) != 0)
      return Status{HCOMM_ERR_PEER_LOST, "the writer closed SharedMemoryChannel '" + st.name +
                                             "' (last version " + std::to_string(version) +
                                             "): no newer version will come"};
    if (!st.writer && !st.writer_identity().alive())
      return Status{HCOMM_ERR_PEER_LOST, "the writer of SharedMemoryChannel '" + st.name +
                                             "' (process " + std::to_string(h.writer_pid) +
                                             ") is gone (last version " + std::to_string(version) +
                                             "): no newer version will come"};
    const auto now = Clock::now();
    if (now >= deadline)
      return Status{HCOMM_ERR_TIMEOUT, "SharedMemoryChannel '" + st.name +
                                           "': no version newer than " +
                                           std::to_string(newer_than) + " within " +
                                           std::to_string(timeout.count()) + " ms"};
    core::futex_wait(&h.notify, seen, std::min<Clock::duration>(deadline - now, kLivenessCheck),
                     core::FutexScope::shared);
  }
}

const std::string& SharedMemoryChannel::name() const {
  return state_->name;
}
size_t SharedMemoryChannel::size() const {
  return state_->header().capacity;
}
bool SharedMemoryChannel::is_writer() const {
  return state_->writer;
}

SharedMemoryChannel::~SharedMemoryChannel() {
  if (!state_->writer) return;
  Header& h = state_->header();
  h.closed.store(1, std::memory_order_release);
  h.notify.fetch_add(1, std::memory_order_release);
  core::futex_wake(&h.notify, INT_MAX, core::FutexScope::shared);
  SharedSegment::unlink(segment_name(state_->name));
}

}  // namespace hcomm
