// The collective matrix, Gloo style: every operation x every algorithm it has x element count
// {0, 1, 7, 4099, 262147} x data type x reduce op x in place or not x every root, on the world
// this process was launched into (hcomm-run -n N, one launch runs every case of that size), each
// result checked against hcomm_reference (tools/reference/) for the inputs of inputs.hpp.
//
// Algorithms are forced through Config::algo: one communicator per algorithm the library has
// (collectives::algorithm_names) plus one with automatic selection (and calibration on), each in
// two flavours: default chunks (counts up to 262147) and 24-byte chunks (counts up to 4099), which
// send even small inputs through the multi-chunk, pipelined paths. Communicators are created in
// the same order on every rank; all but the automatic one live only while their cases run.
//
// Checks besides the values: send buffers of out-of-place calls are unchanged, nothing is written
// outside the result (guard bytes around every buffer, gaps between V-form blocks), allreduce
// results are bit-identical on every rank (hashes allgathered at the end), and algorithm_for()
// reports the forced algorithm (or, on the automatic communicators, an algorithm hcomm has).
//
// The path the launch means to test, checked on the automatic communicator at the start and again
// at the end (a peer that fell back to another link mid-run shows there):
//   every peer on HCOMM_TRANSPORT when that names one protocol (matrix_np3_tcp, the RDMA guest);
//   --expect-transport SAME[,OTHER]  peers with this rank's host id on SAME, the others on OTHER
//                                    (default SAME): "shm" on one host, "shm,tcp" on two;
//   --expect-ring-order R0,R1,...    the topology-aware order of rings and chains;
//   --expect-slot-board              allreduce, broadcast, reduce and allgather of 4 KiB on the
//                                    slot board ("slot"), the large allreduces staged ("staged").
// --chunks default|tiny|both (default both) runs only one of the two flavours.
//
// Output: the first failures with op/algo/count/dtype/op/root/in-place, a per-phase time on rank
// 0, and "rank R: N checks, F failures" on every rank. Exits non-zero on any failure.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithm_choice.hpp"
#include "reference/elements.hpp"
#include "tests/integration/inputs.hpp"

using namespace hcomm_test;
namespace reference = hcomm::tools::reference;
using hcomm::Communicator;
using hcomm::PointToPointOp;
using hcomm::Status;
using hcomm::Work;

namespace {

using Clock = std::chrono::steady_clock;

constexpr DataType kAllTypes[] = {DataType::int8,    DataType::uint8,   DataType::int32,
                                  DataType::int64,   DataType::float16, DataType::bfloat16,
                                  DataType::float32, DataType::float64};
constexpr ReduceOp kAllOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max,
                                ReduceOp::avg, ReduceOp::band, ReduceOp::bor, ReduceOp::bxor};
constexpr size_t kLarge = 262147;
constexpr size_t kTinyChunk = 24;
constexpr auto kP2pDeadline = std::chrono::seconds(120);

// ---------------------------------------------------------------- bookkeeping

struct Comm {
  std::string algo;  // "auto" or one of collectives::algorithm_names()
  bool tiny = false;
  std::unique_ptr<Communicator> c;
  std::string name() const { return algo + (tiny ? " chunk=24" : " chunk=default"); }
};

struct Case {
  const char* op;
  const Comm* comm;
  size_t count;  // per-rank count (V forms: the base count)
  DataType t;
  int redop = -1;     // -1: not a reduction
  int root = -1;      // -1: not rooted
  int in_place = -1;  // -1: not applicable
  std::string str(int n) const {
    std::string s = std::string(op) + " algo=" + comm->name() + " n=" + std::to_string(n) +
                    " count=" + std::to_string(count) + " dtype=" + hcomm::dtype_name(t);
    if (redop >= 0) s += std::string(" op=") + hcomm::reduce_op_name(static_cast<ReduceOp>(redop));
    if (root >= 0) s += " root=" + std::to_string(root);
    if (in_place >= 0) s += in_place ? " in-place" : " out-of-place";
    return s;
  }
};

struct Env {
  int rank = 0, size = 1;
  long checks = 0, failures = 0;
  std::vector<uint64_t> hashes;               // allreduce results, in case order
  std::vector<std::string> hash_labels;       // the matching cases
  std::map<std::string, long> failed_groups;  // "op algo=... count=..." -> failures
  void check(bool ok, const std::string& what, const std::string& why) {
    ++checks;
    if (ok) return;
    ++failures;
    const size_t dt = what.find(" dtype=");
    ++failed_groups[what.substr(0, dt)];
    if (failures <= 12)
      std::fprintf(stderr, "rank %d FAILED: %s: %s\n", rank, what.c_str(), why.c_str());
  }
  void check(const Case& k, const std::string& why) { check(why.empty(), k.str(size), why); }
};

constexpr unsigned char kFill = 0xAB;
constexpr size_t kGuard = 64;

// `elems` elements of t starting one element past a 64-byte boundary, with kGuard bytes of kFill
// on both sides; the data itself starts as kFill too (garbage to every type).
struct Buffer {
  std::vector<unsigned char> storage;
  unsigned char* data;
  size_t es, bytes;
  Buffer(size_t elems, DataType t)
      : storage(elems * hcomm::dtype_size(t) + 2 * kGuard + 128, kFill),
        es(hcomm::dtype_size(t)),
        bytes(elems * hcomm::dtype_size(t)) {
    auto base = reinterpret_cast<uintptr_t>(storage.data());
    data = reinterpret_cast<unsigned char*>((base + 63) / 64 * 64) + kGuard + es;
  }
  unsigned char* at(size_t elem) { return data + elem * es; }
  /// "" when the guard bytes on both sides are untouched.
  std::string guards(const char* name) const {
    for (const unsigned char* p = storage.data(); p < data; ++p)
      if (*p != kFill) return std::string(name) + ": byte before the buffer overwritten";
    for (const unsigned char* p = data + bytes; p < storage.data() + storage.size(); ++p)
      if (*p != kFill)
        return std::string(name) + ": byte " + std::to_string(p - data - bytes) +
               " past the end overwritten";
    return "";
  }
};

template <class F>
void fill(void* buf, size_t count, DataType t, F value) {
  for (size_t i = 0; i < count; ++i) reference::store(t, buf, i, value(i));
}

// "" when buf[0..count) matches expect(i), a reference::Expectation.
template <class E>
std::string compare(const void* buf, size_t count, DataType t, E expect, const std::string& where) {
  for (size_t i = 0; i < count; ++i) {
    const reference::Expectation w = expect(i);
    const double g = reference::load(t, buf, i);
    if (!reference::matches(w, g)) {
      char msg[200];
      std::snprintf(msg, sizeof msg, "%s element %zu: got %.9g, expected %.9g (tolerance %.3g)",
                    where.c_str(), i, g, w.value, w.tolerance);
      return msg;
    }
  }
  return "";
}
template <class W>
std::string exact(const void* buf, size_t count, DataType t, W want, const std::string& where) {
  return compare(
      buf, count, t,
      [&](size_t i) {
        return reference::Expectation{static_cast<double>(want(i)), 0};
      },
      where);
}

std::string bytes_untouched(const unsigned char* p, size_t bytes, const std::string& where) {
  for (size_t i = 0; i < bytes; ++i)
    if (p[i] != kFill) return where + ": byte " + std::to_string(i) + " written";
  return "";
}

std::string why(const Status& st) {
  return st.ok() ? "" : st.to_string();
}

// Appends the first non-empty reason.
void also(std::string& w, const std::string& next) {
  if (w.empty()) w = next;
}

uint64_t fnv1a(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// ---------------------------------------------------------------- the operations

void t_allreduce(Env& e, Comm& cm, size_t count, DataType t, ReduceOp op, bool in_place) {
  Case k{"allreduce", &cm, count, t, int(op), -1, in_place};
  const int r = e.rank, n = e.size;
  Buffer in(count, t), out(count, t);
  fill(in.data, count, t, [&](size_t i) { return input_value(r, i, op, t); });
  unsigned char* dst = in_place ? in.data : out.data;
  Status st = cm.c->allreduce(in.data, dst, count, t, op);
  std::string w = why(st);
  also(w, compare(
              dst, count, t, [&](size_t i) { return reduced(n, i, op, t); }, "recv"));
  if (!in_place)
    also(w, exact(
                in.data, count, t, [&](size_t i) { return input_value(r, i, op, t); },
                "send buffer changed:"));
  also(w, in.guards("send"));
  also(w, out.guards("recv"));
  e.hashes.push_back(st.ok() ? fnv1a(dst, count * in.es) : 0);
  e.hash_labels.push_back(k.str(n));
  e.check(k, w);
}

void t_reduce(Env& e, Comm& cm, size_t count, DataType t, ReduceOp op, int root, bool in_place) {
  Case k{"reduce", &cm, count, t, int(op), root, in_place};
  const int r = e.rank, n = e.size;
  Buffer in(count, t), out(r == root ? count : 0, t);
  fill(in.data, count, t, [&](size_t i) { return input_value(r, i, op, t); });
  // In place means send == recv; non-roots pass recv = nullptr out of place (allowed) and
  // send == recv in place, and must find their input unchanged either way.
  unsigned char* dst = in_place ? in.data : (r == root ? out.data : nullptr);
  Status st = cm.c->reduce(in.data, dst, count, t, op, root);
  std::string w = why(st);
  if (r == root)
    also(w, compare(
                dst, count, t, [&](size_t i) { return reduced(n, i, op, t); }, "recv on the root"));
  if (r != root || !in_place)
    also(w, exact(
                in.data, count, t, [&](size_t i) { return input_value(r, i, op, t); },
                r == root ? "send buffer changed:" : "non-root buffer changed:"));
  also(w, in.guards("send"));
  also(w, out.guards("recv"));
  e.check(k, w);
}

void t_broadcast(Env& e, Comm& cm, size_t count, DataType t, int root) {
  Case k{"broadcast", &cm, count, t, -1, root, -1};
  const int r = e.rank;
  Buffer buf(count, t);
  if (r == root)
    fill(buf.data, count, t, [&](size_t i) { return payload_value(root, root, i, t); });
  std::string w = why(cm.c->broadcast(buf.data, count, t, root));
  also(w,
       exact(
           buf.data, count, t, [&](size_t i) { return payload_value(root, root, i, t); }, "buf"));
  also(w, buf.guards("buf"));
  e.check(k, w);
}

void t_allgather(Env& e, Comm& cm, size_t count, DataType t, bool in_place) {
  Case k{"allgather", &cm, count, t, -1, -1, in_place};
  const int r = e.rank, n = e.size;
  Buffer in(count, t), out(count * n, t);
  unsigned char* src = in_place ? out.at(r * count) : in.data;
  fill(src, count, t, [&](size_t i) { return payload_value(r, r, i, t); });
  std::string w = why(cm.c->allgather(src, out.data, count, t));
  for (int j = 0; j < n; ++j)
    also(w, exact(
                out.at(j * count), count, t, [&](size_t i) { return payload_value(j, j, i, t); },
                "block " + std::to_string(j)));
  if (!in_place)
    also(w, exact(
                in.data, count, t, [&](size_t i) { return payload_value(r, r, i, t); },
                "send buffer changed:"));
  also(w, in.guards("send"));
  also(w, out.guards("recv"));
  e.check(k, w);
}

// V-form counts: uneven, with zero-count ranks (every rank with r % 3 == 1).
size_t vcount(int r, size_t base) {
  return r % 3 == 1 ? 0 : base + static_cast<size_t>(r);
}
// alltoallv: what rank src sends to rank dst; zero for some pairs (self included sometimes).
size_t acount(int src, int dst, size_t base) {
  return (src + 2 * dst) % 4 == 1 ? 0 : base + static_cast<size_t>((src * 3 + dst) % 4);
}
// Displacements with a one-element gap after some blocks; `reversed` lays blocks out from the
// last rank to the first. Returns the extent.
size_t layout(const std::vector<size_t>& counts, bool reversed, std::vector<size_t>& displs) {
  const int n = static_cast<int>(counts.size());
  displs.assign(counts.size(), 0);
  size_t pos = 0;
  for (int s = 0; s < n; ++s) {
    int j = reversed ? n - 1 - s : s;
    displs[j] = pos;
    pos += counts[j] + static_cast<size_t>(j % 2);
  }
  return pos;
}
// The gap elements of a layout must stay untouched.
std::string gaps_untouched(Buffer& b, const std::vector<size_t>& counts,
                           const std::vector<size_t>& displs) {
  for (size_t j = 0; j < counts.size(); ++j)
    if (j % 2 == 1) {
      std::string w = bytes_untouched(b.at(displs[j] + counts[j]), b.es,
                                      "gap after block " + std::to_string(j));
      if (!w.empty()) return w;
    }
  return "";
}

void t_allgatherv(Env& e, Comm& cm, size_t base, DataType t, bool in_place) {
  Case k{"allgatherv", &cm, base, t, -1, -1, in_place};
  const int r = e.rank, n = e.size;
  std::vector<size_t> counts(n), displs;
  for (int j = 0; j < n; ++j) counts[j] = vcount(j, base);
  const size_t extent = layout(counts, true, displs);
  Buffer in(counts[r], t), out(extent, t);
  unsigned char* src = in_place ? out.at(displs[r]) : in.data;
  fill(src, counts[r], t, [&](size_t i) { return payload_value(r, r, i, t); });
  std::string w = why(cm.c->allgatherv(src, out.data, counts, displs, t));
  for (int j = 0; j < n; ++j)
    also(w,
         exact(
             out.at(displs[j]), counts[j], t, [&](size_t i) { return payload_value(j, j, i, t); },
             "block " + std::to_string(j) + " (" + std::to_string(counts[j]) + " elements)"));
  also(w, gaps_untouched(out, counts, displs));
  if (!in_place)
    also(w, exact(
                in.data, counts[r], t, [&](size_t i) { return payload_value(r, r, i, t); },
                "send buffer changed:"));
  also(w, in.guards("send"));
  also(w, out.guards("recv"));
  e.check(k, w);
}

void t_reduce_scatter(Env& e, Comm& cm, size_t count, DataType t, ReduceOp op, bool in_place) {
  Case k{"reduce_scatter", &cm, count, t, int(op), -1, in_place};
  const int r = e.rank, n = e.size;
  const size_t first = static_cast<size_t>(r) * count;
  Buffer in(count * n, t), out(count, t);
  fill(in.data, count * n, t, [&](size_t i) { return input_value(r, i, op, t); });
  // In place (NCCL's convention, the one the algorithms document): recv = send + rank * count.
  unsigned char* dst = in_place ? in.at(first) : out.data;
  std::string w = why(cm.c->reduce_scatter(in.data, dst, count, t, op));
  also(w, compare(
              dst, count, t, [&](size_t i) { return reduced(n, first + i, op, t); }, "recv"));
  if (!in_place)
    also(w, exact(
                in.data, count * n, t, [&](size_t i) { return input_value(r, i, op, t); },
                "send buffer changed:"));
  also(w, in.guards("send"));
  also(w, out.guards("recv"));
  e.check(k, w);
}

void t_alltoall(Env& e, Comm& cm, size_t count, DataType t, bool in_place) {
  Case k{"alltoall", &cm, count, t, -1, -1, in_place};
  const int r = e.rank, n = e.size;
  Buffer in(count * n, t), out(count * n, t);
  for (int j = 0; j < n; ++j)
    fill(in.at(j * count), count, t, [&](size_t i) { return payload_value(r, j, i, t); });
  unsigned char* dst = in_place ? in.data : out.data;
  std::string w = why(cm.c->alltoall(in.data, dst, count, t));
  for (int j = 0; j < n; ++j)
    also(w,
         exact(
             dst + j * count * in.es, count, t, [&](size_t i) { return payload_value(j, r, i, t); },
             "block from rank " + std::to_string(j)));
  for (int j = 0; j < n && !in_place; ++j)
    also(w, exact(
                in.at(j * count), count, t, [&](size_t i) { return payload_value(r, j, i, t); },
                "send buffer changed:"));
  also(w, in.guards("send"));
  also(w, out.guards("recv"));
  e.check(k, w);
}

void t_alltoallv(Env& e, Comm& cm, size_t base, DataType t, bool in_place) {
  Case k{"alltoallv", &cm, base, t, -1, -1, in_place};
  const int r = e.rank, n = e.size;
  std::vector<size_t> sc(n), rc(n), sd, rd;
  for (int j = 0; j < n; ++j) {
    sc[j] = acount(r, j, base);
    rc[j] = acount(j, r, base);
  }
  const size_t s_extent = layout(sc, false, sd), r_extent = layout(rc, true, rd);
  // In place: one buffer holds the send layout before and the receive layout after.
  Buffer in(in_place ? std::max(s_extent, r_extent) : s_extent, t), out(r_extent, t);
  for (int j = 0; j < n; ++j)
    fill(in.at(sd[j]), sc[j], t, [&](size_t i) { return payload_value(r, j, i, t); });
  Buffer& res = in_place ? in : out;
  std::string w = why(cm.c->alltoallv(in.data, sc, sd, res.data, rc, rd, t));
  for (int j = 0; j < n; ++j)
    also(w,
         exact(
             res.at(rd[j]), rc[j], t, [&](size_t i) { return payload_value(j, r, i, t); },
             "block from rank " + std::to_string(j) + " (" + std::to_string(rc[j]) + " elements)"));
  if (!in_place) {
    also(w, gaps_untouched(out, rc, rd));
    for (int j = 0; j < n; ++j)
      also(w, exact(
                  in.at(sd[j]), sc[j], t, [&](size_t i) { return payload_value(r, j, i, t); },
                  "send buffer changed:"));
  }
  also(w, in.guards("send"));
  also(w, out.guards("recv"));
  e.check(k, w);
}

void t_gather(Env& e, Comm& cm, size_t count, DataType t, int root, bool in_place) {
  Case k{"gather", &cm, count, t, -1, root, in_place};
  const int r = e.rank, n = e.size;
  const bool is_root = r == root;
  Buffer in(count, t), out(is_root ? count * n : 0, t);
  // In place on the root: send == recv + root * count. Non-roots pass recv = nullptr.
  unsigned char* src = is_root && in_place ? out.at(root * count) : in.data;
  fill(src, count, t, [&](size_t i) { return payload_value(r, root, i, t); });
  std::string w = why(cm.c->gather(src, is_root ? out.data : nullptr, count, t, root));
  for (int j = 0; j < n && is_root; ++j)
    also(w, exact(
                out.at(j * count), count, t, [&](size_t i) { return payload_value(j, root, i, t); },
                "block " + std::to_string(j)));
  if (src == in.data)
    also(w, exact(
                in.data, count, t, [&](size_t i) { return payload_value(r, root, i, t); },
                "send buffer changed:"));
  also(w, in.guards("send"));
  also(w, out.guards("recv"));
  e.check(k, w);
}

void t_scatter(Env& e, Comm& cm, size_t count, DataType t, int root, bool in_place) {
  Case k{"scatter", &cm, count, t, -1, root, in_place};
  const int r = e.rank, n = e.size;
  const bool is_root = r == root;
  Buffer in(is_root ? count * n : 0, t), out(count, t);
  for (int j = 0; j < n && is_root; ++j)
    fill(in.at(j * count), count, t, [&](size_t i) { return payload_value(root, j, i, t); });
  // In place on the root: recv == send + root * count. Non-roots pass send = nullptr.
  unsigned char* dst = is_root && in_place ? in.at(root * count) : out.data;
  std::string w = why(cm.c->scatter(is_root ? in.data : nullptr, dst, count, t, root));
  also(w, exact(
              dst, count, t, [&](size_t i) { return payload_value(root, r, i, t); }, "recv"));
  for (int j = 0; j < n && is_root && !in_place; ++j)
    also(w, exact(
                in.at(j * count), count, t, [&](size_t i) { return payload_value(root, j, i, t); },
                "send buffer changed:"));
  also(w, in.guards("send"));
  also(w, out.guards("recv"));
  e.check(k, w);
}

void t_barrier(Env& e, Comm& cm) {
  Case k{"barrier", &cm, 0, DataType::uint8, -1, -1, -1};
  e.check(k, why(cm.c->barrier()));
}

std::string wait_both(Work& a, Work& b) {
  std::string w = why(a.wait(kP2pDeadline));
  also(w, why(b.wait(kP2pDeadline)));
  return w;
}

// Ring: every rank sends to next and receives from prev, both posted before either is waited on;
// then two messages on one (pair, tag) must arrive in the order they were sent.
void t_send_recv(Env& e, Comm& cm, size_t count, DataType t) {
  const int r = e.rank, n = e.size;
  if (n < 2) return;
  Case k{"send/recv ring", &cm, count, t, -1, -1, -1};
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  Buffer s(count, t), in(count, t);
  fill(s.data, count, t, [&](size_t i) { return payload_value(r, next, i, t); });
  Work wr = cm.c->recv_async(in.data, count, t, prev, 7);
  Work ws = cm.c->send_async(s.data, count, t, next, 7);
  std::string w = wait_both(wr, ws);
  also(w, exact(
              in.data, count, t, [&](size_t i) { return payload_value(prev, r, i, t); }, "recv"));
  also(w, exact(
              s.data, count, t, [&](size_t i) { return payload_value(r, next, i, t); },
              "send buffer changed:"));
  also(w, in.guards("recv"));
  e.check(k, w);

  Case k2{"send/recv ordered pair", &cm, count, t, -1, -1, -1};
  Buffer s2(count + 1, t), in1(count, t), in2(count + 1, t);
  fill(s2.data, count + 1, t, [&](size_t i) { return payload_value(r, next, i + 7, t); });
  Work a = cm.c->recv_async(in1.data, count, t, prev, 8);
  Work b = cm.c->recv_async(in2.data, count + 1, t, prev, 8);
  Work c = cm.c->send_async(s.data, count, t, next, 8);
  Work d = cm.c->send_async(s2.data, count + 1, t, next, 8);
  w = wait_both(a, b);
  also(w, wait_both(c, d));
  also(w, exact(
              in1.data, count, t, [&](size_t i) { return payload_value(prev, r, i, t); },
              "first message"));
  also(w, exact(
              in2.data, count + 1, t, [&](size_t i) { return payload_value(prev, r, i + 7, t); },
              "second message"));
  also(w, in1.guards("first recv"));
  also(w, in2.guards("second recv"));
  e.check(k2, w);
}

// Batch, ring: send to next and to prev, receive from prev and from next (tags tell the two
// directions apart, which matters when next == prev).
void t_batch_ring(Env& e, Comm& cm, size_t count, DataType t) {
  const int r = e.rank, n = e.size;
  if (n < 2) return;
  Case k{"batch ring", &cm, count, t, -1, -1, -1};
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  Buffer to_next(count, t), to_prev(count + 2, t), from_prev(count, t), from_next(count + 2, t);
  fill(to_next.data, count, t, [&](size_t i) { return payload_value(r, next, i, t); });
  fill(to_prev.data, count + 2, t, [&](size_t i) { return payload_value(r, prev, i + 3, t); });
  using K = PointToPointOp::Kind;
  std::vector<PointToPointOp> ops = {
      {K::recv, from_prev.data, count, t, prev, 1},
      {K::send, to_next.data, count, t, next, 1},
      {K::send, to_prev.data, count + 2, t, prev, 2},
      {K::recv, from_next.data, count + 2, t, next, 2},
  };
  std::string w = why(cm.c->batch(ops));
  also(w, exact(
              from_prev.data, count, t, [&](size_t i) { return payload_value(prev, r, i, t); },
              "from prev"));
  also(w, exact(
              from_next.data, count + 2, t,
              [&](size_t i) { return payload_value(next, r, i + 3, t); }, "from next"));
  also(w, from_prev.guards("from prev"));
  also(w, from_next.guards("from next"));
  e.check(k, w);
}

// Batch, pairwise: every rank exchanges uneven (sometimes empty) messages with every other rank
// in one batch, receives listed first and sends in reverse rank order. On one rank: an empty
// batch, which must complete.
void t_batch_pairwise(Env& e, Comm& cm, size_t base, DataType t) {
  const int r = e.rank, n = e.size;
  Case k{"batch pairwise", &cm, base, t, -1, -1, -1};
  std::vector<std::unique_ptr<Buffer>> outs(n), ins(n);
  std::vector<PointToPointOp> ops;
  using K = PointToPointOp::Kind;
  for (int j = 0; j < n; ++j) {
    if (j == r) continue;
    ins[j] = std::make_unique<Buffer>(acount(j, r, base), t);
    ops.push_back({K::recv, ins[j]->data, acount(j, r, base), t, j, 3});
  }
  for (int j = n - 1; j >= 0; --j) {
    if (j == r) continue;
    outs[j] = std::make_unique<Buffer>(acount(r, j, base), t);
    fill(outs[j]->data, acount(r, j, base), t, [&](size_t i) { return payload_value(r, j, i, t); });
    ops.push_back({K::send, outs[j]->data, acount(r, j, base), t, j, 3});
  }
  std::string w = why(cm.c->batch(ops));
  for (int j = 0; j < n; ++j) {
    if (j == r) continue;
    also(w, exact(
                ins[j]->data, acount(j, r, base), t,
                [&](size_t i) { return payload_value(j, r, i, t); },
                "from rank " + std::to_string(j)));
    also(w, ins[j]->guards("recv"));
  }
  e.check(k, w);
}

// ---------------------------------------------------------------- the path

struct Expect {
  std::string same_host, other_host;  // "": not checked
  std::vector<int> ring_order;        // empty: not checked
  bool slot_board = false;
};

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// The checks of --expect-* (and of a one-protocol HCOMM_TRANSPORT) on `world`.
void check_path(Env& e, const Comm& world, const Expect& x, const char* when) {
  const Communicator& c = *world.c;
  const std::vector<hcomm::RankInfo> ranks = c.ranks();
  const std::string& me = ranks[static_cast<size_t>(e.rank)].host_id;
  const std::string& forced = c.config().transport;
  for (const hcomm::RankInfo& r : ranks) {
    if (r.rank == e.rank) continue;
    std::string want;
    if (!x.same_host.empty()) want = r.host_id == me ? x.same_host : x.other_host;
    if (forced != "auto") {
      e.check(
          want.empty() || want == forced,
          std::string("--expect-transport against HCOMM_TRANSPORT ") + when,
          "expects " + want + " to rank " + std::to_string(r.rank) + ", HCOMM_TRANSPORT=" + forced);
      want = forced;
    }
    if (want.empty()) continue;
    e.check(r.transport == want && r.primary_transport == want,
            std::string("transport to rank ") + std::to_string(r.rank) + " " + when,
            "is " + r.transport + " (primary " + r.primary_transport + "), expected " + want);
  }
  if (!x.ring_order.empty()) {
    std::vector<int> order(ranks.size(), -1);
    for (const hcomm::RankInfo& r : ranks)
      if (r.ring_position >= 0 && r.ring_position < static_cast<int>(order.size()))
        order[static_cast<size_t>(r.ring_position)] = r.rank;
    e.check(order == x.ring_order, std::string("ring order ") + when,
            "is " + join(order) + ", expected " + join(x.ring_order));
  }
  if (x.slot_board) {
    for (const char* op : {"allreduce", "broadcast", "reduce", "allgather"}) {
      const std::string got = c.algorithm_for(op, 4096);
      e.check(got == "slot", std::string(op) + " of 4 KiB on the slot board " + when,
              "runs '" + got + "'");
    }
    const std::string got = c.algorithm_for("allreduce", kLarge * 4);
    e.check(got == "staged", std::string("allreduce of 262147 float32 staged ") + when,
            "runs '" + got + "'");
  }
}

// ---------------------------------------------------------------- the matrix

bool has(const std::vector<std::string>& v, const char* s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The operations each algorithm set forces (and runs), and the HCOMM_ALGO text that forces them.
struct AlgoSet {
  std::string algo;
  std::vector<std::string> ops;
};

// Every operation the matrix runs; p2p is send/recv and batches.
const std::vector<std::string> kMatrixOps = {
    "allreduce", "broadcast", "reduce", "allgather", "allgatherv", "reduce_scatter",
    "alltoall",  "alltoallv", "gather", "scatter",   "barrier",    "p2p"};

// "auto" with every operation, then one set per algorithm the library has
// (collectives::algorithm_names), each with the operations that have it. Hierarchical runs over
// the hosts HCOMM_HOST_ID makes (matrix_np4_interleaved_hosts), else one host, where the
// allreduce is a reduce to the leader and a broadcast, the broadcast a tree of the host and the
// allgather(v) a gather to the leader and a broadcast.
std::vector<AlgoSet> algo_sets() {
  std::vector<AlgoSet> sets = {{"auto", kMatrixOps}};
  for (const std::string& algo : hcomm::collectives::algorithm_names()) {
    AlgoSet set{algo, {}};
    for (const std::string& op : kMatrixOps) {
      hcomm::collectives::OpKind kind;
      if (!hcomm::collectives::parse_op_kind(op, kind)) continue;
      const auto names = hcomm::collectives::algorithm_names(kind);
      if (std::find(names.begin(), names.end(), algo) != names.end()) set.ops.push_back(op);
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

std::string algo_string(const AlgoSet& s) {
  if (s.algo == "auto") return "";
  std::string out;
  for (const std::string& op : s.ops)
    if (op != "barrier" && op != "p2p") out += (out.empty() ? "" : ";") + op + "=" + s.algo;
  return out;
}

// How much of the product a (communicator, count) pair runs:
// - full: every type x every reduce op x every root x in place and out of place;
// - alternate: the same, in place and out of place alternating over the cases (tiny chunks at
//   4099, where every operation is hundreds of messages);
// - large (262147): a list per operation and algorithm, every type somewhere.
enum class Level { full, alternate, large };

// Runs body(type, op, root, in_place) over the product a level asks for. `reduction`: all five
// ops the type has (the bitwise ones for integers only; else only sum, which such operations
// ignore); `rooted`: every root (else root -1).
template <class F>
void product(Env& e, Level level, bool reduction, bool rooted, F body) {
  const int roots = rooted ? e.size : 1;
  size_t k = 0;
  for (DataType t : kAllTypes)
    for (ReduceOp op : kAllOps) {
      if (!reduction && op != ReduceOp::sum) continue;
      if (!hcomm::reduces(op, t)) continue;
      for (int root = 0; root < roots; ++root, ++k) {
        const int r = rooted ? root : -1;
        if (level == Level::full) {
          body(t, op, r, false);
          body(t, op, r, true);
        } else {
          // Alternate so that, over the (type, op) pairs, every root sees both forms.
          body(t, op, r, ((k / static_cast<size_t>(roots)) + static_cast<size_t>(root)) % 2 == 1);
        }
      }
    }
}

// The large cases: every type once per operation family, ops, roots and forms rotated.
struct LargeCase {
  DataType t;
  ReduceOp op;
  bool in_place;
};
std::vector<LargeCase> large_cases(bool reduction, size_t salt) {
  std::vector<LargeCase> out;
  size_t k = salt;
  for (DataType t : kAllTypes) {
    ReduceOp op = reduction ? kAllOps[k % std::size(kAllOps)] : ReduceOp::sum;
    if (!hcomm::reduces(op, t)) op = ReduceOp::max;
    out.push_back({t, op, k % 2 == 1});
    ++k;
  }
  return out;
}

void run_set(Env& e, Comm& cm, const std::vector<std::string>& ops) {
  const int n = e.size;
  // Tiny chunks: the counts that pipeline over many chunks, up to 4099.
  const std::vector<size_t> counts =
      cm.tiny ? std::vector<size_t>{1, 7, 4099} : std::vector<size_t>{0, 1, 7, 4099, kLarge};
  // Rotates the large cases between algorithm sets so that they differ.
  size_t salt = 0;
  for (char ch : cm.algo) salt += static_cast<unsigned char>(ch);

  for (const std::string& op : ops) {
    if (op == "barrier" || op == "p2p") continue;
    std::string got = cm.c->algorithm_for(op, 4096);
    static const std::vector<std::string> kKnown = {"ring",   "tree", "rd",   "hd",
                                                    "direct", "hier", "slot", "staged"};
    bool ok = cm.algo == "auto" ? std::find(kKnown.begin(), kKnown.end(), got) != kKnown.end()
                                : got == cm.algo;
    e.check(ok, "algorithm_for(" + op + ", 4096) on " + cm.name(), "reported '" + got + "'");
  }

  for (size_t count : counts) {
    const Level level = count == kLarge              ? Level::large
                        : (cm.tiny && count == 4099) ? Level::alternate
                                                     : Level::full;
    const bool large = level == Level::large;
    size_t li = 0;  // rotates roots over the large cases

    if (has(ops, "allreduce")) {
      if (!large)
        product(e, level, true, false, [&](DataType t, ReduceOp op, int, bool ip) {
          t_allreduce(e, cm, count, t, op, ip);
        });
      else
        for (const LargeCase& c : large_cases(true, salt))
          t_allreduce(e, cm, count, c.t, c.op, c.in_place);
    }

    if (has(ops, "reduce")) {
      if (!large)
        product(e, level, true, true, [&](DataType t, ReduceOp op, int root, bool ip) {
          t_reduce(e, cm, count, t, op, root, ip);
        });
      else
        for (const LargeCase& c : large_cases(true, salt + 1))
          t_reduce(e, cm, count, c.t, c.op, static_cast<int>(li++ % n), c.in_place);
    }

    if (has(ops, "broadcast")) {
      if (!large)
        product(e, level, false, true, [&](DataType t, ReduceOp, int root, bool ip) {
          // Broadcast is in place by nature: one case per (type, root).
          if (level != Level::full || !ip) t_broadcast(e, cm, count, t, root);
        });
      else
        for (const LargeCase& c : large_cases(false, salt))
          t_broadcast(e, cm, count, c.t, static_cast<int>(li++ % n));
    }

    if (has(ops, "allgather")) {
      if (!large)
        product(e, level, false, false,
                [&](DataType t, ReduceOp, int, bool ip) { t_allgather(e, cm, count, t, ip); });
      else
        for (const LargeCase& c : large_cases(false, salt))
          t_allgather(e, cm, count, c.t, c.in_place);
    }

    if (has(ops, "allgatherv")) {
      if (!large)
        product(e, level, false, false,
                [&](DataType t, ReduceOp, int, bool ip) { t_allgatherv(e, cm, count, t, ip); });
      else
        for (const LargeCase& c : large_cases(false, salt + 1))
          t_allgatherv(e, cm, count, c.t, c.in_place);
    }

    if (has(ops, "reduce_scatter")) {
      if (!large)
        product(e, level, true, false, [&](DataType t, ReduceOp op, int, bool ip) {
          t_reduce_scatter(e, cm, count, t, op, ip);
        });
      else
        for (const LargeCase& c : large_cases(true, salt + 2))
          t_reduce_scatter(e, cm, count, c.t, c.op, c.in_place);
    }

    if (has(ops, "alltoall")) {
      if (!large)
        product(e, level, false, false,
                [&](DataType t, ReduceOp, int, bool ip) { t_alltoall(e, cm, count, t, ip); });
      else
        for (const LargeCase& c : large_cases(false, salt))
          t_alltoall(e, cm, count, c.t, c.in_place);
    }

    if (has(ops, "alltoallv")) {
      if (!large)
        product(e, level, false, false,
                [&](DataType t, ReduceOp, int, bool ip) { t_alltoallv(e, cm, count, t, ip); });
      else
        for (const LargeCase& c : large_cases(false, salt + 1))
          t_alltoallv(e, cm, count, c.t, c.in_place);
    }

    if (has(ops, "gather")) {
      if (!large)
        product(e, level, false, true, [&](DataType t, ReduceOp, int root, bool ip) {
          t_gather(e, cm, count, t, root, ip);
        });
      else
        for (const LargeCase& c : large_cases(false, salt))
          t_gather(e, cm, count, c.t, static_cast<int>(li++ % n), c.in_place);
    }

    if (has(ops, "scatter")) {
      if (!large)
        product(e, level, false, true, [&](DataType t, ReduceOp, int root, bool ip) {
          t_scatter(e, cm, count, t, root, ip);
        });
      else
        for (const LargeCase& c : large_cases(false, salt + 1))
          t_scatter(e, cm, count, c.t, static_cast<int>(li++ % n), c.in_place);
    }

    if (has(ops, "p2p")) {
      for (DataType t : kAllTypes) {
        if (large && t != DataType::float32 && t != DataType::bfloat16 && t != DataType::uint8)
          continue;
        t_send_recv(e, cm, count, t);
        t_batch_ring(e, cm, count, t);
        t_batch_pairwise(e, cm, count, t);
      }
    }

    if (has(ops, "barrier")) t_barrier(e, cm);
  }
  t_barrier(e, cm);  // every communicator ends with a barrier, whatever it forces
}

// Every rank must have produced bit-identical allreduce results: allgather the hashes.
void compare_hashes(Env& e, Comm& world) {
  const size_t h = e.hashes.size(), n = static_cast<size_t>(e.size);
  std::vector<uint64_t> all(h * n);
  Status st = world.c->allgather(e.hashes.data(), all.data(), h, DataType::int64);
  e.check(st.ok(), "allgather of the allreduce result hashes", st.to_string());
  if (!st.ok()) return;
  long differing = 0;
  for (size_t i = 0; i < h; ++i)
    for (size_t j = 0; j < n; ++j)
      if (all[j * h + i] != e.hashes[i]) {
        if (++differing <= 5)
          e.check(false, e.hash_labels[i],
                  "result differs bitwise between rank " + std::to_string(e.rank) + " and rank " +
                      std::to_string(j));
        break;
      }
  e.check(differing == 0,
          "allreduce results bit-identical on every rank (" + std::to_string(h) + " results)",
          std::to_string(differing) + " results differ");
}

// Which chunk flavours run (--chunks): both unless told.
struct Flavours {
  bool default_chunks = true;
  bool tiny_chunks = true;
};

// Parses the --expect-* options into `x` and --chunks into `f`; false (with a message) on
// anything else.
bool parse_args(int argc, char** argv, Expect& x, Flavours& f) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--expect-transport" && has_value) {
      const std::string v = argv[++i];
      const size_t comma = v.find(',');
      x.same_host = v.substr(0, comma);
      x.other_host = comma == std::string::npos ? x.same_host : v.substr(comma + 1);
    } else if (arg == "--expect-ring-order" && has_value) {
      const std::string v = argv[++i];
      for (size_t p = 0; p <= v.size();) {
        const size_t comma = std::min(v.find(',', p), v.size());
        x.ring_order.push_back(std::atoi(v.substr(p, comma - p).c_str()));
        p = comma + 1;
      }
    } else if (arg == "--expect-slot-board") {
      x.slot_board = true;
    } else if (arg == "--chunks" && has_value) {
      const std::string v = argv[++i];
      f.default_chunks = v == "default" || v == "both";
      f.tiny_chunks = v == "tiny" || v == "both";
      if (!f.default_chunks && !f.tiny_chunks) {
        std::fprintf(stderr, "collective_matrix: --chunks '%s': expected default, tiny or both\n",
                     v.c_str());
        return false;
      }
    } else {
      std::fprintf(stderr,
                   "collective_matrix: unknown argument '%s'\n"
                   "usage: collective_matrix [--expect-transport SAME[,OTHER]] "
                   "[--expect-ring-order R0,R1,...] [--expect-slot-board] "
                   "[--chunks default|tiny|both]\n",
                   arg.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Expect expect;
  Flavours flavours;
  if (!parse_args(argc, argv, expect, flavours)) return 2;
  auto env_cfg = hcomm::Config::from_env();
  if (!env_cfg) {
    std::fprintf(stderr, "%s\n", env_cfg.status().to_string().c_str());
    return 2;
  }
  Env e;
  const auto t0 = Clock::now();

  auto make = [&](const AlgoSet& set, bool tiny, bool calibrate) -> std::unique_ptr<Comm> {
    hcomm::Config cfg = *env_cfg;
    cfg.algo = algo_string(set);
    cfg.chunk_bytes = tiny ? kTinyChunk : 0;
    cfg.calibrate = calibrate;
    cfg.op_timeout = std::chrono::seconds(120);
    auto created = Communicator::create(cfg);
    if (!created) {
      std::fprintf(stderr, "rank %d: create [%s%s] algo='%s': %s\n", cfg.rank, set.algo.c_str(),
                   tiny ? " chunk=24" : "", cfg.algo.c_str(), created.status().to_string().c_str());
      return nullptr;
    }
    auto cm = std::make_unique<Comm>();
    cm->algo = set.algo;
    cm->tiny = tiny;
    cm->c = std::move(*created);
    return cm;
  };

  // The automatic communicator (with calibration) lives throughout: it also carries the hashes.
  const std::vector<AlgoSet> sets = algo_sets();
  auto world = make(sets[0], false, true);
  if (!world) return 2;
  e.rank = world->c->rank();
  e.size = world->c->size();
  check_path(e, *world, expect, "at the start");

  for (const AlgoSet& set : sets) {
    for (bool tiny : {false, true}) {
      if (!(tiny ? flavours.tiny_chunks : flavours.default_chunks)) continue;
      const auto p0 = Clock::now();
      std::unique_ptr<Comm> own;
      Comm* cm = world.get();
      if (tiny || set.algo != "auto") {
        own = make(set, tiny, false);
        if (!own) return 2;  // creation is collective: the other ranks fail the same way
        cm = own.get();
      }
      const long before = e.checks;
      run_set(e, *cm, set.ops);
      own.reset();
      if (e.rank == 0)
        std::printf("  [%s] %ld checks, %.2f s\n", (set.algo + (tiny ? " chunk=24" : "")).c_str(),
                    e.checks - before, std::chrono::duration<double>(Clock::now() - p0).count());
    }
  }
  compare_hashes(e, *world);
  check_path(e, *world, expect, "at the end");

  const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("rank %d: %ld checks, %ld failures (n=%d, %.1f s)\n", e.rank, e.checks, e.failures,
              e.size, sec);
  for (const auto& [group, count] : e.failed_groups)
    std::printf("rank %d: %ld failures in %s\n", e.rank, count, group.c_str());
  std::fflush(stdout);
  // Every rank has printed its line before any exits (hcomm-run stops the job at the first
  // non-zero exit).
  (void)world->c->barrier();
  world.reset();
  return e.failures == 0 ? 0 : 1;
}
