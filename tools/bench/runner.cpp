// Per size: warm-up iterations, a barrier, then timed iterations back to back, each timed alone on
// every rank; a rank's time is its median iteration, the reported time the slowest rank's median.
// The check then runs the operation once more on a deterministic input (see inputs.hpp).
// Tenant mode (run_timed) runs one size back to back for a duration instead.
#include "bench/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "reference/elements.hpp"

namespace hcomm::tools::bench {
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

double seconds_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double>(t1 - t0).count();
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Tenant mode: how often rank 0 decides whether to stop (a broadcast of 16 bytes), and how often
// a rank records its byte count.
constexpr double kStopCheckPeriodS = 0.02;
constexpr auto kSamplePeriod = std::chrono::milliseconds(100);
// Operation times kept exactly (32 MiB); beyond, a uniform random sample of this size.
constexpr size_t kMaxLatencies = size_t{1} << 22;
// The fixed fields of a TimedRun exchanged between ranks, as float64.
constexpr size_t kTimedFields = 9;

// Nearest-rank percentile (0 < q <= 1) of `v`, which it reorders.
double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  k = std::min(std::max<size_t>(k, 1), v.size()) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
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
  const bool floats = o.dtype == DataType::float32 || o.dtype == DataType::float64;
  if (floats && !(spec.reduces && o.redop == ReduceOp::prod)) {
    if (o.compression == Compression::fp16) {
      base_.lossy_u = std::ldexp(1.0, -11);
      base_.lossy_s = std::ldexp(1.0, -25);
    } else if (o.compression == Compression::bf16) {
      base_.lossy_u = std::ldexp(1.0, -8);
      base_.lossy_s = std::ldexp(1.0, -134);
    }
  }
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

Row Runner::shape(size_t nominal_bytes) const {
  const Case c = case_for(nominal_bytes);
  Row row;
  row.bytes = bytes_of(c);
  row.count = c.count;
  return row;
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
  const CompressionStats before = comm_.compression_stats();
  row.time_us = measure(c, b, &row.cross_host_bytes);
  if (o_.has_compression) {
    const CompressionStats after = comm_.compression_stats();
    const uint64_t payload = after.payload_bytes - before.payload_bytes;
    // The measurement's own allreduces of 8-byte figures are below any threshold worth noting.
    if (payload > 0)
      row.wire_ratio = static_cast<double>(after.wire_bytes - before.wire_bytes) / payload;
  }
  if (row.time_us > 0) row.algbw = static_cast<double>(row.bytes) / row.time_us / 1e3;
  row.busbw = row.algbw * spec_.bus_factor(c.n);
  if (o_.check) row.wrong = check(c, b, &row);
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
  for (size_t k = 0; k < b.send_elems; ++k)
    reference::store(c.dtype, b.send, k, spec_.send_value(c, k));
  const bool recv_is_input = spec_.recv_is_root_input && c.rank == c.root;
  if (!recv_is_input && !sentinels) return;
  for (size_t k = 0; k < b.recv_elems; ++k) {
    const double want = spec_.expected(c, k).value;
    reference::store(c.dtype, b.recv, k, recv_is_input ? want : sentinel(c, want));
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

std::vector<TimedRun> Runner::run_timed(size_t nominal_bytes, double seconds, int64_t* wrong) {
  const Case c = case_for(nominal_bytes);
  Buffers b = allocate(c);
  fill(c, b, /*sentinels=*/false);
  for (int i = 0; i < o_.warmup; ++i) run_once(c, b);
  barrier();  // start together

  TimedRun me;
  me.rank = comm_.rank();
  const int64_t sent0 = sent_across_hosts();
  auto wire = [&] { return sent0 < 0 ? int64_t{0} : sent_across_hosts() - sent0; };
  const auto start = Clock::now();
  me.start_unix = unix_now();
  me.samples.emplace_back(me.start_unix, 0);
  auto last_sample = start;
  std::vector<double> us;
  us.reserve(1024);
  std::mt19937_64 rng(0x5eed + static_cast<uint64_t>(me.rank));
  double total_us = 0;
  int64_t next_check = 1;  // the first check, after one iteration, tells rank 0 its pace
  for (;;) {
    const auto t0 = Clock::now();
    run_once(c, b);
    const auto t1 = Clock::now();
    const double t = std::chrono::duration<double, std::micro>(t1 - t0).count();
    ++me.iterations;
    total_us += t;
    if (us.size() < kMaxLatencies) {
      us.push_back(t);
    } else {  // reservoir sampling: every operation equally likely to be kept
      const uint64_t j = rng() % static_cast<uint64_t>(me.iterations);
      if (j < kMaxLatencies) us[j] = t;
    }
    if (t1 - last_sample >= kSamplePeriod) {
      me.samples.emplace_back(unix_now(), wire());
      last_sample = t1;
    }
    if (me.iterations < next_check) continue;
    // Rank 0 decides from its clock: stop at the iteration that ends nearest the duration, else
    // check again after ~kStopCheckPeriodS of iterations (or at the predicted end if sooner).
    int64_t control[2] = {0, 0};  // stop, iteration of the next check
    if (me.rank == 0) {
      const double elapsed = seconds_since(start, t1);
      const double per_iter = elapsed / static_cast<double>(me.iterations);
      const double left = seconds - elapsed;
      control[0] = left <= per_iter / 2 ? 1 : 0;
      const double until_end = per_iter > 0 ? std::ceil(left / per_iter) : 1.0;
      const double period = per_iter > 0 ? kStopCheckPeriodS / per_iter : 1.0;
      const double k = std::min(std::max(std::min(until_end, period), 1.0), 65536.0);
      control[1] = me.iterations + static_cast<int64_t>(k);
    }
    Status st = comm_.broadcast(control, 2, DataType::int64, 0);
    if (!st.ok()) fail("broadcast of the stop flag", st);
    if (control[0] != 0) break;
    next_check = control[1];
  }
  const auto end = Clock::now();
  me.elapsed_s = seconds_since(start, end);
  me.end_unix = unix_now();
  const int64_t sent = wire();
  me.samples.emplace_back(me.end_unix, sent);
  me.wire_bytes = sent0 < 0 ? -1 : sent;
  if (me.wire_bytes >= 0 && me.elapsed_s > 0)
    me.wire_gbps = static_cast<double>(me.wire_bytes) * 8 / me.elapsed_s / 1e9;
  me.mean_us = total_us / static_cast<double>(me.iterations);
  me.median_us = percentile(us, 0.5);
  me.p99_us = percentile(us, 0.99);

  std::vector<TimedRun> all = gather(me);
  *wrong = o_.check ? check(c, b) : -1;
  return all;
}

// Every rank's TimedRun on every rank: the fixed fields with allgather, the samples with
// allgatherv (float64 throughout: byte counts stay exact below 2^53).
std::vector<TimedRun> Runner::gather(const TimedRun& mine) {
  const size_t n = static_cast<size_t>(comm_.size());
  const double fields[kTimedFields] = {static_cast<double>(mine.iterations),
                                       mine.elapsed_s,
                                       static_cast<double>(mine.wire_bytes),
                                       mine.median_us,
                                       mine.p99_us,
                                       mine.start_unix,
                                       mine.end_unix,
                                       static_cast<double>(mine.samples.size()),
                                       mine.mean_us};
  std::vector<double> table(n * kTimedFields);
  Status st = comm_.allgather(fields, table.data(), kTimedFields, DataType::float64);
  if (!st.ok()) fail("allgather of the tenant figures", st);

  std::vector<size_t> counts(n), displs(n);
  size_t total = 0;
  for (size_t r = 0; r < n; ++r) {
    counts[r] = 2 * static_cast<size_t>(table[r * kTimedFields + 7]);
    displs[r] = total;
    total += counts[r];
  }
  std::vector<double> flat;
  flat.reserve(2 * mine.samples.size());
  for (const auto& [t, bytes] : mine.samples) {
    flat.push_back(t);
    flat.push_back(static_cast<double>(bytes));
  }
  std::vector<double> samples(std::max<size_t>(total, 1));
  st = comm_.allgatherv(flat.data(), samples.data(), counts, displs, DataType::float64);
  if (!st.ok()) fail("allgatherv of the byte samples", st);

  std::vector<TimedRun> all(n);
  for (size_t r = 0; r < n; ++r) {
    const double* f = &table[r * kTimedFields];
    TimedRun& t = all[r];
    t.rank = static_cast<int>(r);
    t.iterations = static_cast<int64_t>(f[0]);
    t.elapsed_s = f[1];
    t.wire_bytes = static_cast<int64_t>(f[2]);
    t.median_us = f[3];
    t.p99_us = f[4];
    t.start_unix = f[5];
    t.end_unix = f[6];
    t.mean_us = f[8];
    if (t.wire_bytes >= 0 && t.elapsed_s > 0)
      t.wire_gbps = static_cast<double>(t.wire_bytes) * 8 / t.elapsed_s / 1e9;
    for (size_t k = 0; k < counts[r]; k += 2)
      t.samples.emplace_back(samples[displs[r] + k],
                             static_cast<int64_t>(samples[displs[r] + k + 1]));
  }
  return all;
}

// Runs the operation once more on fresh inputs and counts wrong elements over all ranks.
int64_t Runner::check(const Case& c, const Buffers& b, Row* row) {
  fill(c, b, /*sentinels=*/true);
  run_once(c, b);
  int64_t wrong = 0, total = 0;
  const double lossy = c.lossy_u > 0 ? lossy_tolerance(c) : 0;
  double largest = 0;
  for (size_t k = 0; k < b.recv_elems; ++k) {
    reference::Expectation e = spec_.expected(c, k);
    const double got = reference::load(c.dtype, b.recv, k);
    e.tolerance = std::max(e.tolerance, lossy);
    if (!reference::matches(e, got)) ++wrong;
    if (lossy > 0 && std::fabs(got - e.value) > largest) largest = std::fabs(got - e.value);
  }
  if (lossy > 0 && row != nullptr) {
    double all = 0;
    Status st = comm_.allreduce(&largest, &all, 1, DataType::float64, ReduceOp::max);
    if (!st.ok()) fail("allreduce of the errors", st);
    row->max_error = all;
    row->error_bound = lossy;
  }
  Status st = comm_.allreduce(&wrong, &total, 1, DataType::int64, ReduceOp::sum);
  if (!st.ok()) fail("allreduce of the wrong counts", st);
  return total;
}

}  // namespace hcomm::tools::bench
