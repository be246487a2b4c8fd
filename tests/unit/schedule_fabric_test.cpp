// Every collective algorithm, run on an in-process fabric: the schedules of all n ranks of one
// operation execute together with the ScheduleExecutor's semantics (a step starts when the steps
// it waits for completed; a send is in flight until delivered and its payload is read at
// delivery; a frame that arrives before its receive is posted waits, copied, in the receiver's
// link). A seeded RNG interleaves starts and deliveries differently per run. Besides comparing
// the results with a reference computed here in int64/double, the fabric fails a run on any
// deadlock, unmatched frame, duplicate match key, length mismatch, null or misaligned buffer,
// write to a read-only send buffer, and on two in-flight steps racing on the same bytes (a
// buffer written while a send still reads it, read or written while a receive still fills it).
// The ring and chain algorithms also run with permuted ring orders (PlanContext::ring_order):
// random ones and one that interleaves two "hosts", as a topology-aware order would look to them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/reduce_kernels.hpp"

namespace {

using hcomm::DataType;
using hcomm::dtype_size;
using hcomm::ReduceOp;
namespace collectives = hcomm::collectives;
using collectives::Algorithm;
using collectives::OpKind;

constexpr DataType kAllTypes[] = {DataType::int8,    DataType::uint8,   DataType::int32,
                                  DataType::int64,   DataType::float16, DataType::bfloat16,
                                  DataType::float32, DataType::float64};
constexpr ReduceOp kAllOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max,
                                ReduceOp::avg};
constexpr size_t kCounts[] = {0, 1, 7, 67, 4099};
constexpr size_t kChunks[] = {8, 24, 512 * 1024};

// ---- Element values: small integers, which every type holds exactly.

bool is_float(DataType t) {
  return t == DataType::float16 || t == DataType::bfloat16 || t == DataType::float32 ||
         t == DataType::float64;
}

/// binary16 bits of an integer with |v| < 2048 (exact).
uint16_t half_bits(int64_t v) {
  if (v == 0) return 0;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  const uint64_t a = static_cast<uint64_t>(v < 0 ? -v : v);
  int e = 0;
  while ((a >> (e + 1)) != 0) ++e;
  const uint64_t mant = (a << (10 - e)) & 0x3ff;
  return static_cast<uint16_t>(sign | ((e + 15) << 10) | mant);
}

double half_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? INFINITY : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

template <typename T>
void put(std::byte* buf, size_t i, T x) {
  std::memcpy(buf + i * sizeof(T), &x, sizeof(T));
}
template <typename T>
T get(const std::byte* buf, size_t i) {
  T x;
  std::memcpy(&x, buf + i * sizeof(T), sizeof(T));
  return x;
}

void store(std::byte* buf, size_t i, DataType t, int64_t v) {
  switch (t) {
    case DataType::int8:
      return put(buf, i, static_cast<int8_t>(v));
    case DataType::uint8:
      return put(buf, i, static_cast<uint8_t>(v));
    case DataType::int32:
      return put(buf, i, static_cast<int32_t>(v));
    case DataType::int64:
      return put(buf, i, v);
    case DataType::float16:
      return put(buf, i, half_bits(v));
    case DataType::bfloat16: {
      const float f = static_cast<float>(v);  // exact: |v| < 256
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      return put(buf, i, static_cast<uint16_t>(bits >> 16));
    }
    case DataType::float32:
      return put(buf, i, static_cast<float>(v));
    case DataType::float64:
      return put(buf, i, static_cast<double>(v));
  }
}

double load(const std::byte* buf, size_t i, DataType t) {
  switch (t) {
    case DataType::int8:
      return get<int8_t>(buf, i);
    case DataType::uint8:
      return get<uint8_t>(buf, i);
    case DataType::int32:
      return get<int32_t>(buf, i);
    case DataType::int64:
      return static_cast<double>(get<int64_t>(buf, i));
    case DataType::float16:
      return half_value(get<uint16_t>(buf, i));
    case DataType::bfloat16: {
      const uint32_t bits = static_cast<uint32_t>(get<uint16_t>(buf, i)) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DataType::float32:
      return get<float>(buf, i);
    case DataType::float64:
      return get<double>(buf, i);
  }
  return NAN;
}

/// `v` rounded to nearest even with `bits` significant bits (what a division in that type gives).
double round_to_bits(double v, int bits) {
  if (v == 0) return v;
  int e;
  std::frexp(v, &e);
  return std::ldexp(std::nearbyint(std::ldexp(v, bits - e)), e - bits);
}

/// Integer results wrap around in the element type, as the kernels' two's-complement arithmetic.
int64_t wrap(int64_t v, DataType t) {
  switch (t) {
    case DataType::int8:
      return static_cast<int8_t>(v);
    case DataType::uint8:
      return static_cast<uint8_t>(v);
    case DataType::int32:
      return static_cast<int32_t>(v);
    default:
      return v;
  }
}

/// The reduction of `xs` over `n` ranks as the library defines it, computed independently.
double reference(const std::vector<int64_t>& xs, DataType t, ReduceOp op) {
  int64_t acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    const int64_t x = xs[i];
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        acc += x;
        break;
      case ReduceOp::prod:
        acc *= x;
        break;
      case ReduceOp::min:
        acc = std::min(acc, x);
        break;
      case ReduceOp::max:
        acc = std::max(acc, x);
        break;
      case ReduceOp::band:
        acc &= x;
        break;
      case ReduceOp::bor:
        acc |= x;
        break;
      case ReduceOp::bxor:
        acc ^= x;
        break;
    }
  }
  const int64_t n = static_cast<int64_t>(xs.size());
  if (!is_float(t)) {
    acc = wrap(acc, t);
    return static_cast<double>(op == ReduceOp::avg ? acc / n : acc);  // truncates toward zero
  }
  if (op != ReduceOp::avg) return static_cast<double>(acc);
  const double q = static_cast<double>(acc) / static_cast<double>(n);
  switch (t) {
    case DataType::float16:
      return round_to_bits(q, 11);
    case DataType::bfloat16:
      return round_to_bits(q, 8);
    case DataType::float32:
      return round_to_bits(q, 24);
    default:
      return q;
  }
}

// ---- One test case and its buffers.

struct Case {
  OpKind kind = OpKind::allreduce;
  Algorithm algo = Algorithm::automatic;
  DataType dtype = DataType::float32;
  ReduceOp redop = ReduceOp::sum;
  size_t count = 0;
  int n = 1;
  int root = 0;
  bool in_place = false;
  bool same_pointer = false;  ///< reduce_scatter in place as send == recv (not recv in send)
  size_t chunk = 8;
  uint64_t seed = 1;
  std::vector<int> order;  ///< PlanContext::ring_order, the same on every rank; empty: null
  std::vector<int> hosts;  ///< PlanContext::host_of, the same on every rank; empty: null
};

std::string describe(const Case& c) {
  std::ostringstream o;
  o << collectives::op_kind_name(c.kind) << "/" << collectives::algorithm_name(c.algo) << " "
    << hcomm::dtype_name(c.dtype) << " " << hcomm::reduce_op_name(c.redop) << " count " << c.count
    << " n " << c.n << " root " << c.root << (c.in_place ? " in place" : "")
    << (c.same_pointer ? " (send == recv)" : "") << " chunk " << c.chunk << " seed " << c.seed;
  if (!c.order.empty()) {
    o << " ring order";
    for (int r : c.order) o << " " << r;
  }
  if (!c.hosts.empty()) {
    o << " host_of";
    for (int h : c.hosts) o << " " << h;
  }
  return o.str();
}

bool is_reduction(OpKind k) {
  return k == OpKind::allreduce || k == OpKind::reduce || k == OpKind::reduce_scatter;
}

/// Element `idx` of `rank`'s send buffer. Reductions use values whose sums and products stay
/// small; the others distinct-looking values so that a misplaced block shows.
int64_t input(const Case& c, int rank, size_t idx) {
  const bool is_unsigned = c.dtype == DataType::uint8;
  if (!is_reduction(c.kind)) return static_cast<int64_t>((rank * 37 + idx * 7 + 3) % 97);
  if (c.redop == ReduceOp::prod) {
    const size_t v = (static_cast<size_t>(rank) * 5 + idx * 3) % 3;  // 1, 2, -1 (or 1)
    return v == 0 ? 1 : v == 1 ? 2 : (is_unsigned ? 1 : -1);
  }
  const int64_t v = static_cast<int64_t>((static_cast<size_t>(rank) * 7 + idx * 3) % 11);
  return is_unsigned ? v : v - 5;
}

/// Block sizes of the V forms (elements), zero included; none when count is 0.
size_t v_count(const Case& c, int from, int to) {
  if (c.count == 0) return 0;
  const size_t f = static_cast<size_t>(from), t = static_cast<size_t>(to);
  return (c.count * (f + 1) + 3 * t + f) % (c.count + 2);
}

/// Displacements of blocks `sizes`, laid out in `order` with `gap` elements between them.
std::vector<size_t> displs(const std::vector<size_t>& sizes, const std::vector<int>& order,
                           size_t gap) {
  std::vector<size_t> d(sizes.size());
  size_t at = gap;
  for (int i : order) {
    d[static_cast<size_t>(i)] = at;
    at += sizes[static_cast<size_t>(i)] + gap;
  }
  return d;
}

size_t extent(const std::vector<size_t>& counts, const std::vector<size_t>& displs) {
  size_t e = 0;
  for (size_t i = 0; i < counts.size(); ++i) e = std::max(e, displs[i] + counts[i]);
  return e;
}

constexpr size_t kGuard = 64;
constexpr std::byte kGuardByte{0xcd}, kPoisonByte{0xee};

/// A user buffer with guard bytes on both sides (writes past its ends are caught).
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes) : mem_(bytes + 2 * kGuard, kGuardByte) {
    std::fill(data(), data() + bytes, kPoisonByte);
  }
  std::byte* data() { return mem_.empty() ? nullptr : mem_.data() + kGuard; }
  bool guards_intact() const {
    auto ok = [](std::byte b) { return b == kGuardByte; };
    return mem_.empty() || (std::all_of(mem_.begin(), mem_.begin() + kGuard, ok) &&
                            std::all_of(mem_.end() - kGuard, mem_.end(), ok));
  }

 private:
  std::vector<std::byte> mem_;
};

/// One rank's operation, its buffers (in place: one) and what it must hold afterwards.
struct RankIo {
  collectives::Operation op;
  Buffer a, b;
  size_t send_elems = 0, recv_elems = 0;
  std::vector<std::byte> send_before, recv_before;
  std::vector<std::optional<double>> expected;  // per recv element; nullopt: left as it was
};

/// Builds every rank's operation and buffers, fills the inputs and computes the expected output.
std::vector<RankIo> setup(const Case& c) {
  const int n = c.n;
  const size_t un = static_cast<size_t>(n), count = c.count;
  const size_t esize = dtype_size(c.dtype);
  std::vector<RankIo> ranks(un);
  // The V forms' layouts, the same on every rank.
  std::vector<size_t> gv_counts(un);
  for (int i = 0; i < n; ++i) gv_counts[static_cast<size_t>(i)] = v_count(c, i, i);
  std::vector<int> ascending(un), descending(un);
  for (int i = 0; i < n; ++i) ascending[static_cast<size_t>(i)] = descending[un - 1 - i] = i;
  const std::vector<size_t> gv_displs = displs(gv_counts, ascending, 1);
  auto a2a_send = [&](int r) {  // counts, displs
    std::vector<size_t> cnt(un);
    for (int j = 0; j < n; ++j) cnt[static_cast<size_t>(j)] = v_count(c, r, j);
    return std::make_pair(cnt, displs(cnt, ascending, 1));
  };
  auto a2a_recv = [&](int r) {
    std::vector<size_t> cnt(un);
    for (int i = 0; i < n; ++i) cnt[static_cast<size_t>(i)] = v_count(c, i, r);
    return std::make_pair(cnt, displs(cnt, descending, 2));
  };
  // The reduction over all ranks of each input element (computed once: every rank checks it).
  std::vector<double> reduced;
  if (is_reduction(c.kind)) {
    std::vector<int64_t> xs(un);
    const size_t elems = c.kind == OpKind::reduce_scatter ? un * count : count;
    for (size_t i = 0; i < elems; ++i) {
      for (int k = 0; k < n; ++k) xs[static_cast<size_t>(k)] = input(c, k, i);
      reduced.push_back(reference(xs, c.dtype, c.redop));
    }
  }

  for (int r = 0; r < n; ++r) {
    RankIo& io = ranks[static_cast<size_t>(r)];
    collectives::Operation& op = io.op;
    op.kind = c.kind;
    op.dtype = c.dtype;
    op.redop = c.redop;
    op.count = count;
    op.root = c.root;
    op.algo = c.algo;
    op.seq = 1;
    const bool root = r == c.root;
    const size_t ur = static_cast<size_t>(r);
    // Element counts of send and recv, and where send sits in recv when in place (or recv in
    // send for reduce_scatter and scatter); `none` marks a null buffer.
    constexpr size_t none = SIZE_MAX;
    size_t send_elems = count, recv_elems = count, send_in_recv = 0, recv_in_send = none;
    switch (c.kind) {
      case OpKind::allreduce:
        break;
      case OpKind::broadcast:
        if (!root && !c.in_place) send_elems = none;
        break;
      case OpKind::reduce:
        if (!root && !c.in_place) recv_elems = none;
        break;
      case OpKind::allgather:
        recv_elems = un * count;
        send_in_recv = ur * count;
        break;
      case OpKind::allgatherv:
        op.recv_counts = gv_counts;
        op.recv_displs = gv_displs;
        send_elems = gv_counts[ur];
        recv_elems = extent(gv_counts, gv_displs) + 1;
        send_in_recv = gv_displs[ur];
        break;
      case OpKind::reduce_scatter:
        send_elems = un * count;
        recv_in_send = ur * count;
        break;
      case OpKind::alltoall:
        send_elems = recv_elems = un * count;
        break;
      case OpKind::alltoallv: {
        std::tie(op.send_counts, op.send_displs) = a2a_send(r);
        std::tie(op.recv_counts, op.recv_displs) = a2a_recv(r);
        send_elems = extent(op.send_counts, op.send_displs) + 1;
        recv_elems = extent(op.recv_counts, op.recv_displs) + 2;
        if (c.in_place) send_elems = recv_elems = std::max(send_elems, recv_elems);
        break;
      }
      case OpKind::gather:
        recv_elems = root ? un * count : none;
        send_in_recv = root ? ur * count : none;
        break;
      case OpKind::scatter:
        send_elems = root ? un * count : none;
        recv_in_send = root ? ur * count : none;
        break;
      default:
        break;
    }
    const bool reduce_scatter_like = c.kind == OpKind::reduce_scatter || c.kind == OpKind::scatter;
    if (c.same_pointer) {
      recv_elems = send_elems;
      io.a = Buffer(send_elems * esize);
      op.send = op.recv = io.a.data();
    } else if (c.in_place && reduce_scatter_like && recv_in_send != none) {
      io.a = Buffer(send_elems * esize);
      op.send = io.a.data();
      op.recv = io.a.data() + recv_in_send * esize;
    } else if (c.in_place && !reduce_scatter_like && recv_elems != none && send_elems != none &&
               send_in_recv != none) {
      io.a = Buffer(recv_elems * esize);
      op.recv = io.a.data();
      op.send = io.a.data() + send_in_recv * esize;
    } else {
      if (send_elems != none) {
        io.a = Buffer(send_elems * esize);
        op.send = io.a.data();
      }
      if (recv_elems != none) {
        io.b = Buffer(recv_elems * esize);
        op.recv = io.b.data();
      }
    }
    io.send_elems = send_elems == none ? 0 : send_elems;
    io.recv_elems = recv_elems == none ? 0 : recv_elems;
    if (op.send != nullptr) {
      for (size_t i = 0; i < io.send_elems; ++i)
        store(const_cast<std::byte*>(op.send), i, c.dtype, input(c, r, i));
      io.send_before.assign(op.send, op.send + io.send_elems * esize);
    }
    if (op.recv != nullptr) io.recv_before.assign(op.recv, op.recv + io.recv_elems * esize);
  }

  // What each rank's recv holds afterwards.
  for (int r = 0; r < n; ++r) {
    RankIo& io = ranks[static_cast<size_t>(r)];
    const size_t ur = static_cast<size_t>(r);
    const bool root = r == c.root;
    auto& exp = io.expected;
    exp.assign(io.recv_elems, std::nullopt);
    switch (c.kind) {
      case OpKind::allreduce:
        for (size_t i = 0; i < count; ++i) exp[i] = reduced[i];
        break;
      case OpKind::reduce:
        if (root)
          for (size_t i = 0; i < count; ++i) exp[i] = reduced[i];
        break;
      case OpKind::broadcast:
        for (size_t i = 0; i < count; ++i) exp[i] = static_cast<double>(input(c, c.root, i));
        break;
      case OpKind::allgather:
        for (int k = 0; k < n; ++k)
          for (size_t e = 0; e < count; ++e)
            exp[static_cast<size_t>(k) * count + e] = static_cast<double>(input(c, k, e));
        break;
      case OpKind::allgatherv:
        for (int k = 0; k < n; ++k)
          for (size_t e = 0; e < gv_counts[static_cast<size_t>(k)]; ++e)
            exp[gv_displs[static_cast<size_t>(k)] + e] = static_cast<double>(input(c, k, e));
        break;
      case OpKind::reduce_scatter:
        for (size_t e = 0; e < count; ++e)  // send == recv: the result is in block r
          exp[(c.same_pointer ? ur * count : 0) + e] = reduced[ur * count + e];
        break;
      case OpKind::alltoall:
        for (int k = 0; k < n; ++k)
          for (size_t e = 0; e < count; ++e)
            exp[static_cast<size_t>(k) * count + e] =
                static_cast<double>(input(c, k, ur * count + e));
        break;
      case OpKind::alltoallv:
        for (int k = 0; k < n; ++k) {
          const auto from = a2a_send(k);
          const size_t uk = static_cast<size_t>(k);
          for (size_t e = 0; e < io.op.recv_counts[uk]; ++e)
            exp[io.op.recv_displs[uk] + e] = static_cast<double>(input(c, k, from.second[ur] + e));
        }
        break;
      case OpKind::gather:
        if (root)
          for (int k = 0; k < n; ++k)
            for (size_t e = 0; e < count; ++e)
              exp[static_cast<size_t>(k) * count + e] = static_cast<double>(input(c, k, e));
        break;
      case OpKind::scatter:
        for (size_t e = 0; e < count; ++e)
          exp[e] = static_cast<double>(input(c, c.root, ur * count + e));
        break;
      default:
        break;
    }
  }
  return ranks;
}

// ---- The fabric.

/// Runs the schedules of all ranks of one operation together; run() returns the first problem
/// found, or an empty string.
class Fabric {
 public:
  Fabric(std::vector<RankIo>& io, size_t chunk_bytes, bool send_read_only, uint64_t seed,
         const std::vector<int>* ring_order = nullptr, const std::vector<int>* host_of = nullptr)
      : io_(io), rng_(seed) {
    // Some runs deliver eagerly (frames mostly arrive before their receive is posted), some
    // lazily (receives mostly posted first).
    const double biases[] = {0.5, 0.05, 0.95};
    deliver_bias_ = biases[seed % 3];
    const int n = static_cast<int>(io.size());
    for (int r = 0; r < n; ++r) {
      Rank& rk = ranks_.emplace_back();
      const collectives::Operation& op = io[static_cast<size_t>(r)].op;
      rk.s =
          collectives::plan(op, collectives::PlanContext{r, n, chunk_bytes, ring_order, host_of});
      if (send_read_only && op.send != nullptr)
        rk.read_only = {op.send,
                        op.send + io[static_cast<size_t>(r)].send_elems * dtype_size(op.dtype)};
    }
  }

  std::string run() {
    const int n = static_cast<int>(ranks_.size());
    for (int r = 0; r < n && error_.empty(); ++r) check_keys(r);
    for (int r = 0; r < n && error_.empty(); ++r) {
      Rank& rk = ranks_[static_cast<size_t>(r)];
      rk.remaining = rk.s.steps().size();
      for (uint32_t i = 0; i < rk.s.steps().size(); ++i) {
        rk.waits.push_back(rk.s.steps()[i].waits);
        if (rk.s.steps()[i].waits == 0) ready_.push_back({r, i});
      }
    }
    std::uniform_real_distribution<double> coin(0, 1);
    while (error_.empty() && (!ready_.empty() || !flight_.empty())) {
      const bool deliver = !flight_.empty() && (ready_.empty() || coin(rng_) < deliver_bias_);
      auto& pool = deliver ? flight_ : ready_;
      const size_t pick = std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng_);
      const Ref ref = pool[pick];
      pool[pick] = pool.back();
      pool.pop_back();
      if (deliver)
        this->deliver(ref);
      else
        start(ref);
    }
    if (!error_.empty()) return error_;
    for (int r = 0; r < n; ++r) {
      const Rank& rk = ranks_[static_cast<size_t>(r)];
      if (!rk.early.empty()) {
        auto [peer, step, chunk] = rk.early.begin()->first;
        return "rank " + std::to_string(r) + " got a frame nobody receives: from " +
               std::to_string(peer) + " tag " + std::to_string(step) + "/" + std::to_string(chunk);
      }
      if (rk.remaining != 0) {
        std::string what = "deadlock: rank " + std::to_string(r) + " has " +
                           std::to_string(rk.remaining) + " steps that never complete";
        if (!rk.posted.empty()) {
          auto [peer, step, chunk] = rk.posted.begin()->first;
          what += ", e.g. a receive from " + std::to_string(peer) + " tag " + std::to_string(step) +
                  "/" + std::to_string(chunk);
        }
        return what;
      }
    }
    return {};
  }

  const collectives::Schedule& schedule(int r) const { return ranks_[static_cast<size_t>(r)].s; }

  /// Steps in all schedules (to size the test matrix).
  size_t steps() const {
    size_t total = 0;
    for (const Rank& rk : ranks_) total += rk.s.steps().size();
    return total;
  }

 private:
  using Key = std::tuple<int, uint32_t, uint32_t>;  // peer, step tag, chunk tag
  struct Ref {
    int rank;
    uint32_t step;
  };
  struct Access {
    uintptr_t end;
    uint32_t step;
    bool write;
  };
  struct Rank {
    collectives::Schedule s;
    std::vector<uint32_t> waits;
    size_t remaining = 0;
    std::map<Key, uint32_t> posted;               // receives waiting for their frame
    std::map<Key, std::vector<std::byte>> early;  // frames waiting for their receive
    std::multimap<uintptr_t, Access> active;      // bytes in-flight steps read or write
    uintptr_t longest = 0;                        // the longest range in `active`
    std::pair<const std::byte*, const std::byte*> read_only{nullptr, nullptr};
  };

  void fail(int rank, uint32_t step, const std::string& what) {
    if (!error_.empty()) return;
    const collectives::Step& st = ranks_[static_cast<size_t>(rank)].s.steps()[step];
    static const char* kinds[] = {"send", "recv", "recv_reduce", "copy", "average"};
    error_ = "rank " + std::to_string(rank) + " step " + std::to_string(step) + " (" +
             kinds[static_cast<int>(st.kind)] + " peer " + std::to_string(st.peer) + " tag " +
             std::to_string(st.tag_step) + "/" + std::to_string(st.tag_chunk) + ", " +
             std::to_string(st.bytes) + " bytes): " + what;
  }

  void check_keys(int r) {
    std::set<Key> sends, recvs;
    const auto& steps = ranks_[static_cast<size_t>(r)].s.steps();
    const int n = static_cast<int>(ranks_.size());
    for (uint32_t i = 0; i < steps.size(); ++i) {
      const collectives::Step& st = steps[i];
      const bool is_send = st.kind == collectives::Step::Kind::send;
      if (!is_send && st.kind != collectives::Step::Kind::recv &&
          st.kind != collectives::Step::Kind::recv_reduce)
        continue;
      if (st.peer < 0 || st.peer >= n || st.peer == r) return fail(r, i, "bad peer");
      if (!(is_send ? sends : recvs).insert({st.peer, st.tag_step, st.tag_chunk}).second)
        return fail(r, i, "duplicate match key for this peer");
    }
  }

  /// Null (or null-derived) pointers and ranges not made of whole elements.
  bool bad_range(int r, uint32_t i, const std::byte* p, size_t bytes) {
    const collectives::Operation& op = io_[static_cast<size_t>(r)].op;
    const size_t esize = dtype_size(op.dtype);
    if (bytes == 0) return false;
    if (reinterpret_cast<uintptr_t>(p) < (uintptr_t{1} << 24)) {
      fail(r, i, "touches a null buffer");
      return true;
    }
    if (bytes % esize != 0 || reinterpret_cast<uintptr_t>(p) % esize != 0) {
      fail(r, i, "range is not made of whole, aligned elements");
      return true;
    }
    return false;
  }

  /// Whether [p, p + bytes) collides with an in-flight step's access: any access when writing,
  /// a write when reading. Fails the run when it does.
  bool collides(int r, uint32_t i, const std::byte* p, size_t bytes, bool write) {
    Rank& rk = ranks_[static_cast<size_t>(r)];
    if (bytes == 0) return false;
    const uintptr_t b = reinterpret_cast<uintptr_t>(p), e = b + bytes;
    if (write && p < rk.read_only.second && p + bytes > rk.read_only.first) {
      fail(r, i, "writes the send buffer of an out-of-place operation");
      return true;
    }
    for (auto it = rk.active.lower_bound(b > rk.longest ? b - rk.longest : 0);
         it != rk.active.end() && it->first < e; ++it) {
      const Access& a = it->second;
      if (a.end <= b || a.step == i || !(write || a.write)) continue;
      fail(r, i,
           std::string(write ? "writes" : "reads") + " bytes that in-flight step " +
               std::to_string(a.step) + (a.write ? " writes" : " reads") + " (missing order())");
      return true;
    }
    return false;
  }

  void track(int r, uint32_t i, const std::byte* p, size_t bytes, bool write) {
    if (bytes == 0) return;
    Rank& rk = ranks_[static_cast<size_t>(r)];
    const uintptr_t b = reinterpret_cast<uintptr_t>(p);
    rk.active.emplace(b, Access{b + bytes, i, write});
    rk.longest = std::max<uintptr_t>(rk.longest, bytes);
  }

  void untrack(int r, uint32_t i, const std::byte* p, size_t bytes) {
    if (bytes == 0) return;
    Rank& rk = ranks_[static_cast<size_t>(r)];
    auto [b, e] = rk.active.equal_range(reinterpret_cast<uintptr_t>(p));
    for (auto it = b; it != e; ++it) {
      if (it->second.step == i) {
        rk.active.erase(it);
        return;
      }
    }
  }

  void complete(int r, uint32_t i) {
    Rank& rk = ranks_[static_cast<size_t>(r)];
    --rk.remaining;
    for (uint32_t next : rk.s.steps()[i].then)
      if (--rk.waits[next] == 0) ready_.push_back({r, next});
  }

  void start(Ref ref) {
    const int r = ref.rank;
    const uint32_t i = ref.step;
    Rank& rk = ranks_[static_cast<size_t>(r)];
    const collectives::Step& st = rk.s.steps()[i];
    const collectives::Operation& op = io_[static_cast<size_t>(r)].op;
    const size_t esize = dtype_size(op.dtype);
    switch (st.kind) {
      case collectives::Step::Kind::copy:
        if (bad_range(r, i, st.src, st.bytes) || bad_range(r, i, st.dst, st.bytes) ||
            collides(r, i, st.src, st.bytes, false) || collides(r, i, st.dst, st.bytes, true))
          return;
        if (st.bytes > 0) std::memmove(st.dst, st.src, st.bytes);
        return complete(r, i);
      case collectives::Step::Kind::average:
        if (bad_range(r, i, st.dst, st.bytes) || collides(r, i, st.dst, st.bytes, true)) return;
        collectives::finalize_average(st.dst, st.bytes / esize, op.dtype,
                                      static_cast<int>(ranks_.size()));
        return complete(r, i);
      case collectives::Step::Kind::send:
        if (bad_range(r, i, st.src, st.bytes) || collides(r, i, st.src, st.bytes, false)) return;
        track(r, i, st.src, st.bytes, false);
        flight_.push_back(ref);
        return;
      case collectives::Step::Kind::recv:
      case collectives::Step::Kind::recv_reduce: {
        const bool reduces = st.kind == collectives::Step::Kind::recv_reduce;
        if (bad_range(r, i, st.dst, st.bytes) || collides(r, i, st.dst, st.bytes, true)) return;
        if (reduces && st.src != st.dst) {
          if (bad_range(r, i, st.src, st.bytes) || collides(r, i, st.src, st.bytes, false)) return;
          if (st.src < st.dst + st.bytes && st.dst < st.src + st.bytes)
            return fail(r, i, "source and destination overlap partially");
          track(r, i, st.src, st.bytes, false);
        }
        track(r, i, st.dst, st.bytes, true);
        // A receive owns its destination from the moment it starts: scribble over it, so that
        // reading it early shows in the results.
        if (!reduces && st.bytes > 0) std::memset(st.dst, 0xa5, st.bytes);
        const Key key{st.peer, st.tag_step, st.tag_chunk};
        if (auto it = rk.early.find(key); it != rk.early.end()) {
          const std::vector<std::byte> payload = std::move(it->second);
          rk.early.erase(it);
          return land(r, i, payload.data(), payload.size());
        }
        rk.posted.emplace(key, i);
        return;
      }
    }
  }

  void deliver(Ref ref) {
    const collectives::Step& st = ranks_[static_cast<size_t>(ref.rank)].s.steps()[ref.step];
    Rank& to = ranks_[static_cast<size_t>(st.peer)];
    const Key key{ref.rank, st.tag_step, st.tag_chunk};
    // The payload is read now: a sender that changed it meanwhile sends the wrong bytes.
    if (auto it = to.posted.find(key); it != to.posted.end()) {
      const uint32_t recv = it->second;
      to.posted.erase(it);
      land(st.peer, recv, st.src, st.bytes);
    } else {
      to.early.emplace(key, std::vector<std::byte>(st.src, st.src + st.bytes));
    }
    untrack(ref.rank, ref.step, st.src, st.bytes);
    complete(ref.rank, ref.step);
  }

  /// A frame's payload reaches receive step i of rank r.
  void land(int r, uint32_t i, const std::byte* data, size_t bytes) {
    const collectives::Step& st = ranks_[static_cast<size_t>(r)].s.steps()[i];
    const collectives::Operation& op = io_[static_cast<size_t>(r)].op;
    if (bytes != st.bytes)
      return fail(r, i, "length mismatch: the frame has " + std::to_string(bytes) + " bytes");
    if (st.kind == collectives::Step::Kind::recv) {
      if (bytes > 0) std::memcpy(st.dst, data, bytes);
    } else {
      collectives::reduce(st.dst, st.src, data, bytes / dtype_size(op.dtype), op.dtype, op.redop);
      if (st.src != st.dst) untrack(r, i, st.src, st.bytes);
    }
    untrack(r, i, st.dst, st.bytes);
    complete(r, i);
  }

  std::vector<RankIo>& io_;
  std::vector<Rank> ranks_;
  std::vector<Ref> ready_, flight_;
  std::mt19937_64 rng_;
  double deliver_bias_ = 0.5;
  std::string error_;
};

// ---- Running cases.

/// Runs one case on the fabric and checks every rank's buffers; "" when all is well.
std::string run_case(const Case& c) {
  std::vector<RankIo> io = setup(c);
  Fabric fabric(io, c.chunk, !c.in_place, c.seed, c.order.empty() ? nullptr : &c.order,
                c.hosts.empty() ? nullptr : &c.hosts);
  std::string err = fabric.run();
  if (!err.empty()) return err;
  // Rings and chains send only to the next rank in the ring order (so a topology-aware order
  // crosses each boundary once).
  for (size_t p = 0; p < c.order.size(); ++p) {
    const int r = c.order[p], next = c.order[(p + 1) % c.order.size()];
    for (const collectives::Step& st : fabric.schedule(r).steps())
      if (st.kind == collectives::Step::Kind::send && st.peer != next)
        return "rank " + std::to_string(r) + " sends to " + std::to_string(st.peer) +
               ", not to the next rank in the ring order, " + std::to_string(next);
  }
  if (c.algo == Algorithm::hier && !c.hosts.empty()) {  // only leaders talk across hosts
    auto host = [&](int r) { return c.hosts[static_cast<size_t>(r)]; };
    // A host's leader: its lowest rank; a broadcast's root leads its own host.
    auto leader = [&](int r) {
      if (c.kind == OpKind::broadcast && host(r) == host(c.root)) return r == c.root;
      return std::find(c.hosts.begin(), c.hosts.end(), host(r)) - c.hosts.begin() == r;
    };
    std::map<int, size_t> into_host;  // bytes each host receives from the others
    for (int r = 0; r < c.n; ++r)
      for (const collectives::Step& st : fabric.schedule(r).steps()) {
        if (st.kind != collectives::Step::Kind::send || host(r) == host(st.peer)) continue;
        if (!(leader(r) && leader(st.peer)))
          return "rank " + std::to_string(r) + " sends to " + std::to_string(st.peer) +
                 " on another host, and they are not both leaders";
        into_host[host(st.peer)] += st.bytes;
      }
    // Broadcast and allgather(v): each host receives what it lacks exactly once.
    if (c.kind == OpKind::broadcast || c.kind == OpKind::allgather ||
        c.kind == OpKind::allgatherv) {
      for (int h : std::set<int>(c.hosts.begin(), c.hosts.end())) {
        size_t lacks = 0;
        for (int r = 0; r < c.n; ++r) {
          const collectives::Operation& op = io[static_cast<size_t>(r)].op;
          const size_t block =
              (c.kind == OpKind::allgatherv ? op.recv_counts[static_cast<size_t>(r)] : c.count) *
              dtype_size(c.dtype);
          if (c.kind == OpKind::broadcast && r == c.root && host(r) != h) lacks = block;
          if (c.kind != OpKind::broadcast && host(r) != h) lacks += block;
        }
        if (into_host[h] != lacks)
          return "host " + std::to_string(h) + " receives " + std::to_string(into_host[h]) +
                 " bytes from other hosts, not the " + std::to_string(lacks) + " it lacks";
      }
    }
  }
  const size_t esize = dtype_size(c.dtype);
  for (int r = 0; r < c.n; ++r) {
    RankIo& rio = io[static_cast<size_t>(r)];
    const std::string who = "rank " + std::to_string(r) + ": ";
    if (!rio.a.guards_intact() || !rio.b.guards_intact()) return who + "wrote past a buffer end";
    if (!c.in_place && !rio.send_before.empty() &&
        std::memcmp(rio.op.send, rio.send_before.data(), rio.send_before.size()) != 0)
      return who + "changed the send buffer";
    for (size_t e = 0; e < rio.expected.size(); ++e) {
      const std::byte* at = rio.op.recv + e * esize;
      if (!rio.expected[e]) {
        if (std::memcmp(at, rio.recv_before.data() + e * esize, esize) != 0)
          return who + "recv element " + std::to_string(e) + " should not have changed";
      } else if (load(rio.op.recv, e, c.dtype) != *rio.expected[e]) {
        std::ostringstream o;
        o << who << "recv element " << e << " is " << load(rio.op.recv, e, c.dtype) << ", expected "
          << *rio.expected[e];
        return o.str();
      }
    }
  }
  if (c.kind == OpKind::allreduce) {
    const size_t bytes = c.count * esize;
    for (int r = 1; r < c.n; ++r)
      if (std::memcmp(io[0].op.recv, io[static_cast<size_t>(r)].op.recv, bytes) != 0)
        return "rank " + std::to_string(r) + "'s result differs from rank 0's in its bits";
  }
  return {};
}

/// Runs cases, reporting each failure (up to a few: one bug tends to fail many cases).
class Runner {
 public:
  void operator()(const Case& c) {
    ++cases_;
    if (failures_ >= 5) return;
    const std::string err = run_case(c);
    CHECK_MESSAGE(err.empty(), describe(c) << ": " << err);
    if (!err.empty()) ++failures_;
  }
  ~Runner() { MESSAGE(cases_ << " cases"); }

 private:
  int cases_ = 0;
  int failures_ = 0;
};

bool rooted(OpKind k) {
  return k == OpKind::broadcast || k == OpKind::reduce || k == OpKind::gather ||
         k == OpKind::scatter;
}

/// Whether `algo` runs `kind` around a ring or along a chain, and so follows the ring order.
bool follows_ring_order(OpKind k, Algorithm algo) {
  return algo == Algorithm::ring &&
         (k == OpKind::allreduce || k == OpKind::broadcast || k == OpKind::reduce ||
          k == OpKind::allgather || k == OpKind::allgatherv || k == OpKind::reduce_scatter);
}

/// The ring orders of n >= 3 ranks tried besides the identity: two random permutations (from
/// `seed`) and two "hosts" interleaved, 0, 2, 4, ..., 1, 3, 5, ...
std::vector<std::vector<int>> ring_orders(int n, uint64_t seed) {
  std::vector<std::vector<int>> orders;
  if (n < 3) return orders;
  std::mt19937_64 rng(seed);
  for (int k = 0; k < 2; ++k) {
    std::vector<int> o(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) o[static_cast<size_t>(i)] = i;
    for (size_t i = o.size() - 1; i > 0; --i) std::swap(o[i], o[rng() % (i + 1)]);  // Fisher-Yates
    orders.push_back(std::move(o));
  }
  std::vector<int> interleaved;
  for (int start : {0, 1})
    for (int i = start; i < n; i += 2) interleaved.push_back(i);
  orders.push_back(std::move(interleaved));
  return orders;
}

/// Host layouts for the hierarchical algorithms over n ranks, hosts numbered in order of their
/// lowest rank: one host (null and explicit), contiguous pairs, interleaved over two and three
/// hosts, contiguous hosts of uneven sizes 3, 1, 2, 3, ..., one rank per host, and with `random`
/// (n >= 4) last a random assignment to 2..n-1 hosts, seeded by n: uneven and not contiguous.
std::vector<std::vector<int>> host_layouts(int n, bool random = false) {
  std::vector<std::vector<int>> out{{}};
  auto add = [&](auto host_of_rank) {
    std::vector<int> h(static_cast<size_t>(n));
    std::map<int, int> number;
    for (int r = 0; r < n; ++r) {
      const int raw = host_of_rank(r);
      number.emplace(raw, static_cast<int>(number.size()));
      h[static_cast<size_t>(r)] = number[raw];
    }
    if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(std::move(h));
  };
  add([](int) { return 0; });
  add([](int r) { return r / 2; });
  add([](int r) { return r % 2; });
  add([](int r) { return r % 3; });
  add([](int r) {
    const int sizes[] = {3, 1, 2};
    int host = 0;
    for (int left = r; left >= sizes[host % 3]; ++host) left -= sizes[host % 3];
    return host;
  });
  add([](int r) { return r; });
  if (random && n >= 4) {
    std::mt19937_64 rng(static_cast<uint64_t>(n) * 7919);
    const int hosts = 2 + static_cast<int>(rng() % static_cast<uint64_t>(n - 2));
    std::vector<int> random(static_cast<size_t>(n));
    for (int& h : random) h = static_cast<int>(rng() % static_cast<uint64_t>(hosts));
    add([&](int r) { return random[static_cast<size_t>(r)]; });
  }
  return out;
}

/// The matrix for one (kind, algorithm): n = 1..8, every count, chunk size, root (rooted
/// kinds), in place (reduce_scatter: both forms) or not, `types` x `ops`, two interleavings. Large
/// counts with tiny chunks run only the first type and op, to keep the runtime sane. Rings and
/// chains also run with each of ring_orders() (one interleaving, the first type; large counts
/// with tiny chunks only with the interleaved hosts). Hierarchical algorithms run over each of
/// host_layouts() (the first type and no large counts with tiny chunks, but for contiguous pairs
/// and the random layout; one interleaving each, the layouts already vary the schedules).
void run_matrix(Runner& run, OpKind kind, Algorithm algo, const std::vector<DataType>& types,
                const std::vector<ReduceOp>& ops) {
  for (int n = 1; n <= 8; ++n) {
    const auto layouts =
        algo == Algorithm::hier ? host_layouts(n, true) : std::vector<std::vector<int>>{{}};
    for (size_t l = 0; l < layouts.size(); ++l)
      for (size_t count : kCounts)
        for (size_t chunk : kChunks)
          for (DataType t : types)
            for (ReduceOp op : ops)
              for (int in_place = 0; in_place < (kind == OpKind::reduce_scatter ? 3 : 2);
                   ++in_place)
                for (int root = 0; root < (rooted(kind) ? n : 1); ++root) {
                  const bool big = count * dtype_size(t) / chunk > 64;
                  if (big && (t != types[0] || op != ops[0] || (root != 0 && root != n - 1)))
                    continue;
                  if (layouts.size() > 1 && (t != types[0] || big) && l != 2 &&
                      l + 1 != layouts.size())
                    continue;
                  Case c;
                  c.kind = kind;
                  c.algo = algo;
                  c.hosts = std::vector<int>(layouts[l]);  // copy-assigning trips GCC 12 -Wnonnull
                  c.dtype = t;
                  c.redop = op;
                  c.count = count;
                  c.n = n;
                  c.root = root;
                  c.in_place = in_place != 0;
                  c.same_pointer = in_place == 2;
                  c.chunk = chunk;
                  const uint64_t base = static_cast<uint64_t>(n + count + chunk + root) + l * 13;
                  for (uint64_t seed = 1; seed <= (big || layouts.size() > 1 ? 1u : 2u); ++seed) {
                    c.seed = seed + base;
                    run(c);
                  }
                  if (!follows_ring_order(kind, algo) || t != types[0]) continue;
                  const uint64_t order_seed =
                      base * 31 + static_cast<uint64_t>(in_place * 7 + static_cast<int>(op));
                  auto orders = ring_orders(n, order_seed);
                  if (big && !orders.empty()) orders.erase(orders.begin(), orders.end() - 1);
                  for (std::vector<int>& order : orders) {
                    c.order = std::move(order);
                    ++c.seed;
                    run(c);
                  }
                }
  }
}

const std::vector<ReduceOp> kOpsAll(std::begin(kAllOps), std::end(kAllOps));
const std::vector<ReduceOp> kNoOp{ReduceOp::sum};

}  // namespace

TEST_CASE("fabric: allreduce, every algorithm") {
  Runner run;
  const std::vector<DataType> all(std::begin(kAllTypes), std::end(kAllTypes));
  const std::vector<DataType> few{DataType::float32, DataType::int8, DataType::float16,
                                  DataType::bfloat16};
  SUBCASE("ring") {
    run_matrix(run, OpKind::allreduce, Algorithm::ring, all, kOpsAll);
  }
  SUBCASE("rd") {
    run_matrix(run, OpKind::allreduce, Algorithm::rd, all, kOpsAll);
  }
  SUBCASE("tree") {
    run_matrix(run, OpKind::allreduce, Algorithm::tree, few, kOpsAll);
  }
  SUBCASE("hd") {
    run_matrix(run, OpKind::allreduce, Algorithm::hd, few, kOpsAll);
  }
}

TEST_CASE("fabric: hierarchical allreduce over host layouts") {
  Runner run;
  const std::vector<DataType> all(std::begin(kAllTypes), std::end(kAllTypes));
  const std::vector<DataType> few{DataType::float32, DataType::int8};
  for (int n = 1; n <= 8; ++n) {
    const auto layouts = host_layouts(n);
    for (size_t l = 0; l < layouts.size(); ++l) {
      // Every type for contiguous pairs and uneven hosts (layouts 2 and 5, where they differ).
      const std::vector<DataType>& types = l == 2 || l + 1 == layouts.size() - 1 ? all : few;
      for (size_t count : kCounts)
        for (size_t chunk : kChunks)
          for (DataType t : types)
            for (ReduceOp op : kAllOps)
              for (int in_place = 0; in_place < 2; ++in_place) {
                const bool big = count * dtype_size(t) / chunk > 64;
                if (big && (t != types[0] || (op != ReduceOp::sum && op != ReduceOp::avg)))
                  continue;
                Case c;
                c.kind = OpKind::allreduce;
                c.algo = Algorithm::hier;
                c.dtype = t;
                c.redop = op;
                c.count = count;
                c.n = n;
                c.in_place = in_place != 0;
                c.chunk = chunk;
                c.hosts = std::vector<int>(layouts[l]);  // copy-assigning trips GCC 12 -Wnonnull
                c.seed = static_cast<uint64_t>(n * 1000 + l * 100 + count + chunk) +
                         static_cast<uint64_t>(op) * 7 + static_cast<uint64_t>(in_place);
                run(c);
              }
    }
  }
  // From HierarchicalAllreduce::kRingBytes on, the phases are chains and a ring.
  for (int n : {5, 8})
    for (const std::vector<int>& hosts : host_layouts(n))
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg})
        for (size_t chunk : {size_t{4096}, size_t{512 * 1024}}) {
          Case c;
          c.kind = OpKind::allreduce;
          c.algo = Algorithm::hier;
          c.redop = op;
          c.count = 20011;
          c.n = n;
          c.in_place = op == ReduceOp::avg;
          c.chunk = chunk;
          c.hosts = std::vector<int>(hosts);
          c.seed = static_cast<uint64_t>(n + chunk) + hosts.size();
          run(c);
        }
  // From 2 segments of HierarchicalAllreduce::kSegmentBytes on, segments pipeline through the
  // phases: 2 segments and a last short one, uneven hosts, in place and not.
  for (int n : {4, 5})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
      Case c;
      c.kind = OpKind::allreduce;
      c.algo = Algorithm::hier;
      c.redop = op;
      c.count = 2 * collectives::HierarchicalAllreduce::kSegmentBytes / sizeof(float) + 1001;
      c.n = n;
      c.in_place = op == ReduceOp::avg;
      c.chunk = 512 * 1024;
      c.hosts = std::vector<int>(host_layouts(n).back());
      c.seed = static_cast<uint64_t>(n) * 31 + static_cast<uint64_t>(op);
      run(c);
    }
}

TEST_CASE("fabric: allreduce of a large float32 buffer") {
  Runner run;
  for (Algorithm algo : {Algorithm::ring, Algorithm::hd})
    for (int n : {3, 8}) {
      Case c;
      c.kind = OpKind::allreduce;
      c.algo = algo;
      c.count = 262147;
      c.n = n;
      c.chunk = 512 * 1024;
      c.seed = static_cast<uint64_t>(n);
      run(c);
    }
}

TEST_CASE("fabric: broadcast and reduce, every algorithm and root") {
  Runner run;
  const std::vector<DataType> bcast_types{DataType::uint8, DataType::float32};
  const std::vector<DataType> reduce_types{DataType::int32, DataType::float16, DataType::float64};
  for (Algorithm algo : {Algorithm::ring, Algorithm::tree, Algorithm::rd}) {
    run_matrix(run, OpKind::broadcast, algo, bcast_types, kNoOp);
    run_matrix(run, OpKind::reduce, algo, reduce_types, kOpsAll);
  }
}

TEST_CASE("fabric: allgather(v) and reduce_scatter") {
  Runner run;
  const std::vector<DataType> types{DataType::uint8, DataType::float32, DataType::int64};
  const std::vector<DataType> reduce_types{DataType::int8, DataType::bfloat16, DataType::float32};
  for (Algorithm algo : {Algorithm::ring, Algorithm::direct}) {
    run_matrix(run, OpKind::allgather, algo, types, kNoOp);
    run_matrix(run, OpKind::allgatherv, algo, types, kNoOp);
    run_matrix(run, OpKind::reduce_scatter, algo, reduce_types, kOpsAll);
  }
}

TEST_CASE("fabric: hierarchical broadcast and allgather(v) over host layouts") {
  Runner run;
  const std::vector<DataType> types{DataType::float32, DataType::uint8, DataType::int64};
  SUBCASE("broadcast") {
    run_matrix(run, OpKind::broadcast, Algorithm::hier, types, kNoOp);
  }
  SUBCASE("allgather") {
    run_matrix(run, OpKind::allgather, Algorithm::hier, types, kNoOp);
  }
  SUBCASE("allgatherv") {
    run_matrix(run, OpKind::allgatherv, Algorithm::hier, types, kNoOp);
  }
}

TEST_CASE("fabric: hierarchical broadcast and allgather(v) through chains and a ring of leaders") {
  Runner run;
  // Large enough for chains and the leaders' ring (HierarchicalBroadcast/Allgather::kRingBytes),
  // in many chunks and in one.
  for (OpKind kind : {OpKind::broadcast, OpKind::allgather, OpKind::allgatherv})
    for (int n : {5, 8})
      for (const std::vector<int>& hosts : host_layouts(n, true))
        for (size_t chunk : {size_t{4096}, size_t{512 * 1024}})
          for (int root : {0, n / 2, n - 1}) {
            if (kind != OpKind::broadcast && root != 0) continue;
            Case c;
            c.kind = kind;
            c.algo = Algorithm::hier;
            c.dtype = DataType::int32;
            c.count = kind == OpKind::broadcast ? 40009 : 6007;
            c.n = n;
            c.root = root;
            c.in_place = (chunk + static_cast<size_t>(root)) % 3 == 0;
            c.chunk = chunk;
            c.hosts = std::vector<int>(hosts);
            c.seed = static_cast<uint64_t>(n + chunk + root) + hosts.size();
            run(c);
          }
}

TEST_CASE("fabric: alltoall(v), gather, scatter") {
  Runner run;
  const std::vector<DataType> types{DataType::uint8, DataType::int32, DataType::float64};
  for (OpKind kind : {OpKind::alltoall, OpKind::alltoallv, OpKind::gather, OpKind::scatter})
    run_matrix(run, kind, Algorithm::direct, types, kNoOp);
}

TEST_CASE("fabric: barrier and point-to-point") {
  for (int n = 1; n <= 8; ++n) {
    std::vector<RankIo> io(static_cast<size_t>(n));
    for (RankIo& r : io) r.op.kind = OpKind::barrier;
    Fabric fabric(io, 8, false, static_cast<uint64_t>(n));
    CHECK(fabric.run().empty());
    CHECK((fabric.steps() > 0) == (n > 1));
  }
  for (size_t count : {size_t{0}, size_t{1}, size_t{67}}) {
    for (size_t chunk : kChunks) {
      CAPTURE(count);
      CAPTURE(chunk);
      std::vector<std::byte> out(count * 4), in(count * 4);
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(i * 7 + 1);
      std::vector<RankIo> io(2);
      io[1].op.kind = OpKind::send;
      io[1].op.send = out.data();
      io[1].op.peer = 0;
      io[1].send_elems = count;
      io[0].op.kind = OpKind::recv;
      io[0].op.recv = in.data();
      io[0].op.peer = 1;
      for (RankIo& r : io) {
        r.op.dtype = DataType::int32;
        r.op.count = count;
      }
      Fabric fabric(io, chunk, true, count + chunk);
      CHECK(fabric.run().empty());
      CHECK(fabric.steps() >= 2);  // an empty message still sends a frame
      CHECK(in == out);
    }
  }
}

TEST_CASE("plan: algorithm table, defaults and names") {
  using K = OpKind;
  const K kinds[] = {K::allreduce, K::broadcast, K::allgather, K::reduce_scatter, K::barrier,
                     K::send,      K::recv,      K::reduce,    K::allgatherv,     K::alltoall,
                     K::alltoallv, K::gather,    K::scatter};
  const std::map<K, std::set<Algorithm>> table = {
      {K::allreduce,
       {Algorithm::ring, Algorithm::tree, Algorithm::rd, Algorithm::hd, Algorithm::hier}},
      {K::broadcast, {Algorithm::ring, Algorithm::tree, Algorithm::rd, Algorithm::hier}},
      {K::reduce, {Algorithm::ring, Algorithm::tree, Algorithm::rd}},
      {K::allgather, {Algorithm::ring, Algorithm::direct, Algorithm::hier}},
      {K::allgatherv, {Algorithm::ring, Algorithm::direct, Algorithm::hier}},
      {K::reduce_scatter, {Algorithm::ring, Algorithm::direct}},
      {K::alltoall, {Algorithm::direct}},
      {K::alltoallv, {Algorithm::direct}},
      {K::gather, {Algorithm::direct}},
      {K::scatter, {Algorithm::direct}},
      {K::barrier, {}},
      {K::send, {}},
      {K::recv, {}}};
  for (K k : kinds) {
    CAPTURE(collectives::op_kind_name(k));
    CHECK(std::string(collectives::op_kind_name(k)) != "unknown");
    CHECK(collectives::supports(k, Algorithm::automatic));
    for (int a = 1; a < collectives::kNumAlgorithms; ++a) {
      const auto algo = static_cast<Algorithm>(a);
      CHECK(collectives::supports(k, algo) == (table.at(k).count(algo) != 0));
    }
    const Algorithm d = collectives::default_algorithm(k);
    CHECK(collectives::supports(k, d));
    if (!table.at(k).empty()) CHECK(table.at(k).count(d) == 1);
  }
  CHECK(collectives::default_algorithm(K::allreduce) == Algorithm::ring);
  CHECK(collectives::default_algorithm(K::allgatherv) == Algorithm::ring);
  CHECK(collectives::default_algorithm(K::alltoallv) == Algorithm::direct);
  CHECK(collectives::default_algorithm(K::scatter) == Algorithm::direct);
  for (int a = 0; a < collectives::kNumAlgorithms; ++a) {
    Algorithm parsed = Algorithm::ring;
    const auto algo = static_cast<Algorithm>(a);
    CHECK(collectives::parse_algorithm(collectives::algorithm_name(algo), parsed));
    CHECK(parsed == algo);
  }
  Algorithm unused;
  CHECK_FALSE(collectives::parse_algorithm("bogus", unused));
  CHECK(std::string(collectives::algorithm_name(Algorithm::automatic)) == "auto");
}
