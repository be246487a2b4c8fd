// The collective matrix: every operation × data type × reduce op × element count × in-place or
// not, on the world this process was launched into (hcomm-run -n N), every result checked against
// the independent reference of reference.hpp. A second communicator with a tiny chunk size sends
// small inputs through the multi-chunk (pipelined) paths. Exits non-zero on any mismatch.
//
// Usage: collective_matrix [--large]   (--large adds the >= 16 MiB cases)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/integration/reference.hpp"

using namespace hcomm_test;
using hcomm::Communicator;
using hcomm::Status;

namespace {

constexpr DataType kTypes[] = {DataType::int8,    DataType::uint8,   DataType::int32,
                               DataType::int64,   DataType::float16, DataType::bfloat16,
                               DataType::float32, DataType::float64};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max,
                             ReduceOp::avg};

struct Tally {
  int passed = 0, failed = 0;
  void check(bool ok, const std::string& what, int rank) {
    if (ok) {
      ++passed;
    } else {
      ++failed;
      if (failed <= 20) std::fprintf(stderr, "rank %d FAILED: %s\n", rank, what.c_str());
    }
  }
};

// A buffer whose data starts `misalign` elements past a 64-byte boundary.
struct Buffer {
  std::vector<unsigned char> storage;
  unsigned char* data;
  Buffer(size_t elems, size_t esize, size_t misalign)
      : storage((elems + misalign) * esize + 64, 0xAB) {
    auto base = reinterpret_cast<uintptr_t>(storage.data());
    data = reinterpret_cast<unsigned char*>((base + 63) / 64 * 64) + misalign * esize;
  }
};

std::string label(const char* op, DataType t, ReduceOp r, size_t count, bool in_place,
                  const char* comm) {
  return std::string(op) + " " + hcomm::dtype_name(t) + " " + hcomm::reduce_op_name(r) +
         " count=" + std::to_string(count) + (in_place ? " in-place" : " out-of-place") + " [" +
         comm + "]";
}

// Compares out[0..count) with the expected reduction of elements [first, first + count).
bool matches_reduction(const void* out, size_t count, size_t first, int size, ReduceOp op,
                       DataType t, std::string* why) {
  for (size_t i = 0; i < count; ++i) {
    double want = expected_reduction(size, first + i, op, t), got = load(out, i, t);
    if (std::fabs(got - want) > tolerance(want, op, t)) {
      *why = " element " + std::to_string(first + i) + ": got " + std::to_string(got) +
             ", expected " + std::to_string(want);
      return false;
    }
  }
  return true;
}

void test_allreduce(Communicator& c, size_t count, DataType t, ReduceOp op, bool in_place,
                    const char* name, Tally& tally) {
  const size_t es = hcomm::dtype_size(t);
  Buffer in(count, es, 1), out(count, es, 1);
  for (size_t i = 0; i < count; ++i) store(in.data, i, t, input_value(c.rank(), i, op, t));
  void* dst = in_place ? in.data : out.data;
  Status st = c.allreduce(in.data, dst, count, t, op);
  std::string why;
  bool ok = st.ok() && matches_reduction(dst, count, 0, c.size(), op, t, &why);
  tally.check(ok, label("allreduce", t, op, count, in_place, name) + " " + st.to_string() + why,
              c.rank());
}

void test_reduce_scatter(Communicator& c, size_t count, DataType t, ReduceOp op, bool in_place,
                         const char* name, Tally& tally) {
  const size_t es = hcomm::dtype_size(t), n = static_cast<size_t>(c.size());
  Buffer in(count * n, es, 1), out(count, es, 1);
  for (size_t i = 0; i < count * n; ++i) store(in.data, i, t, input_value(c.rank(), i, op, t));
  void* dst = in_place ? in.data + static_cast<size_t>(c.rank()) * count * es : out.data;
  Status st = c.reduce_scatter(in.data, dst, count, t, op);
  std::string why;
  bool ok = st.ok() && matches_reduction(dst, count, static_cast<size_t>(c.rank()) * count,
                                         c.size(), op, t, &why);
  tally.check(ok,
              label("reduce_scatter", t, op, count, in_place, name) + " " + st.to_string() + why,
              c.rank());
}

void test_allgather(Communicator& c, size_t count, DataType t, bool in_place, const char* name,
                    Tally& tally) {
  const size_t es = hcomm::dtype_size(t), n = static_cast<size_t>(c.size());
  Buffer in(count, es, 1), out(count * n, es, 1);
  auto value = [&](int r, size_t i) { return input_value(r, i, ReduceOp::sum, t); };
  unsigned char* own = out.data + static_cast<size_t>(c.rank()) * count * es;
  unsigned char* src = in_place ? own : in.data;
  for (size_t i = 0; i < count; ++i) store(src, i, t, value(c.rank(), i));
  Status st = c.allgather(src, out.data, count, t);
  bool ok = st.ok();
  for (size_t r = 0; ok && r < n; ++r)
    for (size_t i = 0; ok && i < count; ++i)
      ok = load(out.data, r * count + i, t) == value(static_cast<int>(r), i);
  tally.check(ok,
              label("allgather", t, ReduceOp::sum, count, in_place, name) + " " + st.to_string(),
              c.rank());
}

void test_broadcast(Communicator& c, size_t count, DataType t, int root, const char* name,
                    Tally& tally) {
  const size_t es = hcomm::dtype_size(t);
  Buffer buf(count, es, 1);
  for (size_t i = 0; i < count; ++i)
    store(buf.data, i, t, c.rank() == root ? input_value(root, i, ReduceOp::sum, t) : 0);
  Status st = c.broadcast(buf.data, count, t, root);
  bool ok = st.ok();
  for (size_t i = 0; ok && i < count; ++i)
    ok = load(buf.data, i, t) == input_value(root, i, ReduceOp::sum, t);
  tally.check(ok,
              label("broadcast", t, ReduceOp::sum, count, true, name) +
                  " root=" + std::to_string(root) + " " + st.to_string(),
              c.rank());
}

void test_send_recv(Communicator& c, size_t count, DataType t, const char* name, Tally& tally) {
  if (c.size() < 2) return;
  const size_t es = hcomm::dtype_size(t);
  const int next = (c.rank() + 1) % c.size(), prev = (c.rank() + c.size() - 1) % c.size();
  Buffer out(count, es, 1), in(count, es, 1);
  for (size_t i = 0; i < count; ++i)
    store(out.data, i, t, input_value(c.rank(), i, ReduceOp::sum, t));
  // Post both, then wait: a ring of blocking sends would rely on buffering.
  hcomm::Work r = c.recv_async(in.data, count, t, prev, 7);
  hcomm::Work s = c.send_async(out.data, count, t, next, 7);
  Status st = r.wait(std::chrono::seconds(60));
  Status st2 = s.wait(std::chrono::seconds(60));
  bool ok = st.ok() && st2.ok();
  for (size_t i = 0; ok && i < count; ++i)
    ok = load(in.data, i, t) == input_value(prev, i, ReduceOp::sum, t);
  tally.check(ok,
              label("send/recv", t, ReduceOp::sum, count, false, name) + " " + st.to_string() +
                  " " + st2.to_string(),
              c.rank());
}

void run_matrix(Communicator& c, const std::vector<size_t>& counts, const char* name,
                Tally& tally) {
  for (size_t count : counts) {
    for (DataType t : kTypes) {
      for (ReduceOp op : kOps)
        for (bool in_place : {false, true}) {
          test_allreduce(c, count, t, op, in_place, name, tally);
          test_reduce_scatter(c, count, t, op, in_place, name, tally);
        }
      for (bool in_place : {false, true}) test_allgather(c, count, t, in_place, name, tally);
      for (int root = 0; root < c.size(); ++root) test_broadcast(c, count, t, root, name, tally);
      test_send_recv(c, count, t, name, tally);
    }
    Status st = c.barrier();
    tally.check(st.ok(), std::string("barrier [") + name + "] " + st.to_string(), c.rank());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool large = argc > 1 && std::strcmp(argv[1], "--large") == 0;
  auto cfg = hcomm::Config::from_env();
  if (!cfg) {
    std::fprintf(stderr, "%s\n", cfg.status().to_string().c_str());
    return 2;
  }
  Tally tally;
  auto t0 = std::chrono::steady_clock::now();
  {
    auto world = Communicator::create(*cfg);
    if (!world) {
      std::fprintf(stderr, "create: %s\n", world.status().to_string().c_str());
      return 2;
    }
    // The test-only knob: 24-byte chunks force every path to pipeline over several chunks.
    hcomm::Config tiny = *cfg;
    tiny.chunk_bytes = 24;
    auto chunked = Communicator::create(tiny);
    if (!chunked) {
      std::fprintf(stderr, "create (tiny chunks): %s\n", chunked.status().to_string().c_str());
      return 2;
    }
    run_matrix(**world, {0, 1, 7, 1031}, "default chunks", tally);
    run_matrix(**chunked, {1, 7, 67, 301}, "24-byte chunks", tally);
    if (large) {
      const size_t big = (size_t{16} << 20) / 4 + 3;  // a little over 16 MiB of float32
      for (bool in_place : {false, true}) {
        test_allreduce(**world, big, DataType::float32, ReduceOp::sum, in_place, "large", tally);
        test_reduce_scatter(**world, big / static_cast<size_t>((*world)->size()) + 1,
                            DataType::float32, ReduceOp::max, in_place, "large", tally);
        test_allgather(**world, big / static_cast<size_t>((*world)->size()) + 1, DataType::float32,
                       in_place, "large", tally);
      }
      test_broadcast(**world, big, DataType::float32, (*world)->size() - 1, "large", tally);
      test_send_recv(**world, big, DataType::float32, "large", tally);
      test_allreduce(**world, big, DataType::bfloat16, ReduceOp::sum, false, "large", tally);
    }
  }
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("collective matrix on %s ranks: %d passed, %d failed (%.1f s)\n",
              std::getenv("HCOMM_WORLD_SIZE") ? std::getenv("HCOMM_WORLD_SIZE") : "?", tally.passed,
              tally.failed, sec);
  return tally.failed == 0 ? 0 : 1;
}
