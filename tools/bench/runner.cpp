// Per size: warm-up iterations, a barrier, then timed iterations back to back, each timed alone on
// every rank; a rank's time is its median iteration, the reported time the slowest rank's median.
// The check then runs the operation once more on a deterministic input (see reference.hpp).
#include "bench/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/elements.hpp"

namespace hcomm::bench {
namespace {

using Clock = std::chrono::steady_clock;

void* make(std::shared_ptr<void>* storage, size_t bytes, bool present) {
  // Present buffers are never null, even for 0 elements: null means "none" to the API.
  const size_t page = 4096;
  const size_t rounded = (bytes / page + 1) * page;
  void* p = std::aligned_alloc(page, rounded);
  if (p == nullptr) {
    std::fprintf(stderr, "hcomm-bench: cannot allocate %zu bytes\n", rounded);
    std::exit(1);
  }
  std::memset(p, 0, rounded);
  storage->reset(p, std::free);
  return present ? p : nullptr;
}

Case with_count(Case c, size_t count) {
  c.count = count;
  return c;
}

}  // namespace

Runner::Runner(Communicator& comm, const Options& o, const OpSpec& spec)
    : comm_(comm), o_(o), spec_(spec) {
  base_.rank = comm.rank();
  base_.n = comm.size();
  base_.root = spec.rooted ? o.root : -1;
  base_.dtype = o.dtype;
  base_.redop = o.redop;
  base_.reduces = spec.reduces;
}

// nccl-tests' rounding: whole elements, and whole blocks of world_size elements when blocked.
Case Runner::case_for(size_t nominal_bytes) const {
  Case c = base_;
  const size_t unit = hcomm::dtype_size(c.dtype) * (spec_.blocked ? static_cast<size_t>(c.n) : 1);
  c.count = nominal_bytes / unit;
  return c;
}

size_t Runner::bytes_of(const Case& c) const {  // the size column; barrier runs with count 0
  return c.count * hcomm::dtype_size(c.dtype) * (spec_.blocked ? static_cast<size_t>(c.n) : 1);
}

Row Runner::run(size_t nominal_bytes) {
  const Case c = case_for(nominal_bytes);
  Buffers b = allocate(c);
  fill(c, b, /*sentinels=*/false);
  Row row;
  row.bytes = bytes_of(c);
  row.count = c.count;
  // The library sizes its choice by the count as passed (one rank's block for the block ops).
  row.algo = comm_.algorithm_for(spec_.name, c.count * hcomm::dtype_size(c.dtype));
  row.time_us = measure(c, b, &row.cross_host_bytes);
  if (row.time_us > 0) row.algbw = static_cast<double>(row.bytes) / row.time_us / 1e3;
  row.busbw = row.algbw * spec_.bus_factor(c.n);
  if (o_.check) row.wrong = check(c, b);
  return row;
}

void Runner::fail(const char* what, const Status& st) const {
  std::fprintf(stderr, "hcomm-bench: rank %d: %s failed: %s\n", comm_.rank(), what,
               st.to_string().c_str());
  std::exit(kExitWrong);
}

void Runner::run_once(const Case& c, const Buffers& b) {
  Status st = spec_.start(comm_, c, b).wait(comm_.config().op_timeout);
  if (!st.ok()) fail(spec_.name, st);
}

void Runner::barrier() {
  Status st = comm_.barrier();
  if (!st.ok()) fail("barrier", st);
}

Buffers Runner::allocate(const Case& c) const {
  const size_t es = hcomm::dtype_size(c.dtype);
  Buffers b;
  b.send_elems = spec_.send_elems(c);
  b.recv_elems = spec_.recv_elems(c);
  // A rank without a buffer passes nullptr, as the API allows; 0-count ops still get one.
  const bool has_send = b.send_elems > 0 || spec_.send_elems(with_count(c, 1)) > 0;
  const bool has_recv = b.recv_elems > 0 || spec_.recv_elems(with_count(c, 1)) > 0;
  b.send = make(&b.send_storage, b.send_elems * es, has_send);
  b.recv = make(&b.recv_storage, b.recv_elems * es, has_recv);
  return b;
}

// Inputs get the pattern; with `sentinels`, results get a value they must overwrite (only the
// check needs that, and computing it costs a reference per element).
void Runner::fill(const Case& c, const Buffers& b, bool sentinels) const {
  for (size_t k = 0; k < b.send_elems; ++k) store(c.dtype, b.send, k, spec_.send_value(c, k));
  const bool recv_is_input = spec_.recv_is_root_input && c.rank == c.root;
  if (!recv_is_input && !sentinels) return;
  for (size_t k = 0; k < b.recv_elems; ++k) {
    const double want = spec_.expected(c, k);
    store(c.dtype, b.recv, k, recv_is_input ? want : sentinel(c, want));
  }
}

int64_t Runner::sent_across_hosts() const {
  const auto ranks = comm_.ranks();
  const std::string& mine = ranks[static_cast<size_t>(comm_.rank())].host_id;
  int64_t sent = 0;
  bool other_hosts = false;
  for (const auto& r : ranks) {
    if (r.host_id == mine) continue;
    other_hosts = true;
    sent += static_cast<int64_t>(r.bytes_sent);
  }
  return other_hosts ? sent : -1;
}

double Runner::measure(const Case& c, const Buffers& b, int64_t* cross_host_bytes) {
  for (int i = 0; i < o_.warmup; ++i) run_once(c, b);
  barrier();  // start the timed iterations together
  const int64_t sent_before = sent_across_hosts();
  std::vector<double> us(static_cast<size_t>(o_.iters));
  for (double& t : us) {
    const auto t0 = Clock::now();
    run_once(c, b);
    t = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
  // Counted before the allreduces below, which cross hosts too.
  int64_t mine = sent_before < 0 ? -1 : (sent_across_hosts() - sent_before) / o_.iters;
  int64_t all = 0;
  Status counted = comm_.allreduce(&mine, &all, 1, DataType::int64, ReduceOp::sum);
  if (!counted.ok()) fail("allreduce of the byte counts", counted);
  *cross_host_bytes = sent_before < 0 ? -1 : all;
  // The median resists a stray slow iteration; the slowest rank's median is what a step that
  // waits for all ranks sees.
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  double median = us[us.size() / 2], slowest = 0;
  Status st = comm_.allreduce(&median, &slowest, 1, DataType::float64, ReduceOp::max);
  if (!st.ok()) fail("allreduce of the times", st);
  return slowest;
}

// Runs the operation once more on fresh inputs and counts wrong elements over all ranks.
int64_t Runner::check(const Case& c, const Buffers& b) {
  fill(c, b, /*sentinels=*/true);
  run_once(c, b);
  int64_t wrong = 0, total = 0;
  for (size_t k = 0; k < b.recv_elems; ++k)
    if (!matches(c, load(c.dtype, b.recv, k), spec_.expected(c, k))) ++wrong;
  Status st = comm_.allreduce(&wrong, &total, 1, DataType::int64, ReduceOp::sum);
  if (!st.ok()) fail("allreduce of the wrong counts", st);
  return total;
}

}  // namespace hcomm::bench
