// Compression end to end on real processes (hcomm-run -n N, N >= 2; HCOMM_TRANSPORT=tcp, or
// two namespace hosts): what the codecs promise, checked against values each rank computes on
// its own from every rank's inputs.
//
//  lossy     fp16 and bf16 allreduce (sum, avg, min, max; float32 and float64) with every
//            algorithm the library has: each element within the README's bound of the exact
//            result (long double), and the same bits on every rank; reduce_scatter, reduce,
//            broadcast, allgather, alltoall, gather, scatter and send/recv within their bound;
//            an fp16 payload beyond binary16's range comes back finite (bf16 for that frame).
//  lossless  zstd and delta: the same operations bit-exact; delta sends of a buffer with 10%
//            changed carry a small fraction of the payload (compression_stats).
//  mixed     ranks with different codecs still agree (a receiver decodes whatever arrives).
//  scope     a CompressionScope compresses that thread's operations only.
//  one host  (without HCOMM_HOST_ID per rank) fp16/bf16 frames travel raw, values rounded alike:
//            the same bound and the same bits.
//  feedback  with HCOMM_COMP_ERROR_FEEDBACK the mean of many fp16 allreduces of one input is
//            closer to the exact result than one rounding.
//  auto      on one host `auto` compresses nothing and says why.
//
// Prints "rank R: N checks, F failures" and exits non-zero on a failure.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <hcomm/hcomm.hpp>

#include "collectives/algorithm_choice.hpp"

using hcomm::Communicator;
using hcomm::Compression;
using hcomm::DataType;
using hcomm::ReduceOp;
using hcomm::Status;

namespace {

int checks = 0, failures = 0;

void check(bool ok, const std::string& what) {
  ++checks;
  if (ok) return;
  if (++failures <= 20) std::fprintf(stderr, "FAIL: %s\n", what.c_str());
}

void require(const Status& st, const std::string& what) {
  check(st.ok(), what + ": " + st.to_string());
}

/// Rank r's input at element i: a fraction that 16 bits cannot hold, of either sign.
double input(int r, size_t i) {
  const double base = static_cast<double>((static_cast<size_t>(r) * 7 + i * 3) % 11) - 5;
  return base + static_cast<double>((static_cast<size_t>(r) * 13 + i * 29) % 997 + 1) / 998.0;
}

struct Lossy {
  double u, s;
};
Lossy error_of(Compression c) {
  if (c == Compression::bf16) return {std::ldexp(1.0, -8), std::ldexp(1.0, -134)};
  return {std::ldexp(1.0, -11), std::ldexp(1.0, -25)};
}

/// The README's bound for a result element whose inputs' magnitudes add up to `abs_sum`.
double bound(Compression c, int n, double abs_sum) {
  const Lossy e = error_of(c);
  return n * (e.u + std::ldexp(1.0, -24)) * abs_sum + n * e.s;
}

template <class T>
std::vector<T> inputs_of(int r, size_t count) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<T>(input(r, i));
  return v;
}

double exact(ReduceOp op, int n, size_t i, double* abs_sum) {
  long double acc = op == ReduceOp::min ? INFINITY : op == ReduceOp::max ? -INFINITY : 0;
  *abs_sum = 0;
  for (int r = 0; r < n; ++r) {
    const long double x = input(r, i);
    *abs_sum += std::fabs(static_cast<double>(x));
    if (op == ReduceOp::min)
      acc = std::min(acc, x);
    else if (op == ReduceOp::max)
      acc = std::max(acc, x);
    else
      acc += x;
  }
  if (op == ReduceOp::avg) acc /= n;
  return static_cast<double>(acc);
}

uint64_t hash_bytes(const void* p, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/// True when every rank passed the same hash.
bool same_everywhere(Communicator& comm, uint64_t h) {
  std::vector<uint64_t> all(static_cast<size_t>(comm.size()));
  if (!comm.allgather(&h, all.data(), 1, DataType::int64).ok()) return false;
  return std::all_of(all.begin(), all.end(), [&](uint64_t x) { return x == all[0]; });
}

template <class T>
void lossy_allreduce(Communicator& comm, Compression c, ReduceOp op, size_t count,
                     const std::string& algo, bool same_bits = true) {
  const int n = comm.size();
  auto send = inputs_of<T>(comm.rank(), count);
  std::vector<T> recv(count, T(-1));
  const std::string what =
      std::string("allreduce ") + hcomm::to_string(c) + " " + hcomm::reduce_op_name(op) + " " +
      (sizeof(T) == 4 ? "f32" : "f64") + " algo " + algo + " (" +
      comm.algorithm_for("allreduce", count * sizeof(T)) + ") count " + std::to_string(count);
  require(comm.allreduce(send.data(), recv.data(), count,
                         sizeof(T) == 4 ? DataType::float32 : DataType::float64, op),
          what);
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < count; ++i) {
    double abs_sum;
    const double want = exact(op, n, i, &abs_sum);
    const double err = std::fabs(static_cast<double>(recv[i]) - want);
    worst = std::max(worst, err / bound(c, n, abs_sum));
    bad += !(err <= bound(c, n, abs_sum));
  }
  check(bad == 0, what + ": " + std::to_string(bad) + " elements beyond the bound (worst " +
                      std::to_string(worst) + " of it)");
  const bool same = same_everywhere(comm, hash_bytes(recv.data(), count * sizeof(T)));
  if (same_bits) check(same, what + ": ranks hold different bits");
}

/// Data movement under a lossy codec: one rounding of the value sent.
bool near(Compression c, double got, double want) {
  const Lossy e = error_of(c);
  return std::fabs(got - want) <= e.u * std::fabs(want) + e.s;
}

void lossy_movement(Communicator& comm, Compression c) {
  const int n = comm.size(), me = comm.rank();
  const size_t count = 5000;
  const std::string tag = std::string(" ") + hcomm::to_string(c);
  // broadcast from rank 1
  std::vector<float> buf = me == 1 ? inputs_of<float>(1, count) : std::vector<float>(count, -1);
  require(comm.broadcast(buf.data(), count, DataType::float32, 1), "broadcast" + tag);
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) bad += !near(c, buf[i], static_cast<float>(input(1, i)));
  check(bad == 0, "broadcast" + tag + ": " + std::to_string(bad) + " wrong");
  // allgather
  auto mine = inputs_of<float>(me, count);
  std::vector<float> all(count * static_cast<size_t>(n), -1);
  require(comm.allgather(mine.data(), all.data(), count, DataType::float32), "allgather" + tag);
  bad = 0;
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      bad += !near(c, all[static_cast<size_t>(r) * count + i], static_cast<float>(input(r, i)));
  check(bad == 0, "allgather" + tag + ": " + std::to_string(bad) + " wrong");
  // alltoall: block d of rank s holds input(s, d * count + i)
  auto a2a_send = inputs_of<float>(me, count * static_cast<size_t>(n));
  std::vector<float> a2a(count * static_cast<size_t>(n), -1);
  require(comm.alltoall(a2a_send.data(), a2a.data(), count, DataType::float32), "alltoall" + tag);
  bad = 0;
  for (int s = 0; s < n; ++s)
    for (size_t i = 0; i < count; ++i)
      bad += !near(c, a2a[static_cast<size_t>(s) * count + i],
                   static_cast<float>(input(s, static_cast<size_t>(me) * count + i)));
  check(bad == 0, "alltoall" + tag + ": " + std::to_string(bad) + " wrong");
  // reduce_scatter (sum): block me of everyone's input
  auto rs_send = inputs_of<double>(me, count * static_cast<size_t>(n));
  std::vector<double> rs(count, -1);
  require(comm.reduce_scatter(rs_send.data(), rs.data(), count, DataType::float64, ReduceOp::sum),
          "reduce_scatter" + tag);
  bad = 0;
  for (size_t i = 0; i < count; ++i) {
    double abs_sum;
    const double want = exact(ReduceOp::sum, n, static_cast<size_t>(me) * count + i, &abs_sum);
    bad += !(std::fabs(rs[i] - want) <= bound(c, n, abs_sum));
  }
  check(bad == 0, "reduce_scatter" + tag + ": " + std::to_string(bad) + " beyond the bound");
  // reduce to rank 0
  std::vector<float> red(count, -1);
  require(comm.reduce(mine.data(), red.data(), count, DataType::float32, ReduceOp::sum, 0),
          "reduce" + tag);
  if (me == 0) {
    bad = 0;
    for (size_t i = 0; i < count; ++i) {
      double abs_sum;
      const double want = exact(ReduceOp::sum, n, i, &abs_sum);
      bad += !(std::fabs(red[i] - want) <= bound(c, n, abs_sum));
    }
    check(bad == 0, "reduce" + tag + ": " + std::to_string(bad) + " beyond the bound");
  }
  // send/recv around the ring
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  std::vector<float> got(count, -1);
  auto w = comm.recv_async(got.data(), count, DataType::float32, from, 5);
  require(comm.send(mine.data(), count, DataType::float32, to, 5), "send" + tag);
  require(w.wait(std::chrono::seconds(60)), "recv" + tag);
  bad = 0;
  for (size_t i = 0; i < count; ++i) bad += !near(c, got[i], static_cast<float>(input(from, i)));
  check(bad == 0, "send/recv" + tag + ": " + std::to_string(bad) + " wrong");
  // Beyond binary16: finite results (the frame goes as bf16).
  std::vector<float> big(count, 70000.0f), sum(count, 0);
  require(comm.allreduce(big.data(), sum.data(), count, DataType::float32, ReduceOp::sum),
          "allreduce of 70000s" + tag);
  bad = 0;
  for (float x : sum) bad += !(std::isfinite(x) && std::fabs(x - 70000.0 * n) <= 70000.0 * n / 64);
  check(bad == 0, "allreduce of 70000s" + tag + ": " + std::to_string(bad) + " not finite/near");
}

/// Lossless: the same operations give exactly what the uncompressed run gives.
void lossless(Communicator& comm, Compression c) {
  const int n = comm.size(), me = comm.rank();
  const size_t count = 70001;
  const std::string tag = std::string(" ") + hcomm::to_string(c);
  auto send = inputs_of<float>(me, count);
  std::vector<float> plain(count), coded(count);
  comm.set_compression(Compression::none);
  require(comm.allreduce(send.data(), plain.data(), count, DataType::float32, ReduceOp::sum),
          "allreduce none");
  comm.set_compression(c);
  for (int k = 0; k < 3; ++k) {  // again and again: delta then sends what changed (nothing)
    require(comm.allreduce(send.data(), coded.data(), count, DataType::float32, ReduceOp::sum),
            "allreduce" + tag);
    check(std::memcmp(plain.data(), coded.data(), count * 4) == 0,
          "allreduce" + tag + " differs from the uncompressed result");
  }
  // delta over point to point: 20 versions of a buffer, 10% of it changed each time.
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  std::vector<float> mine(262144), got(mine.size()), want(mine.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    mine[i] = static_cast<float>(input(me, i));
    want[i] = static_cast<float>(input(from, i));
  }
  const auto before = comm.compression_stats();
  size_t wrong = 0;
  for (int v = 0; v < 20; ++v) {
    for (size_t i = 0; i < mine.size(); ++i) {  // a tenth of the elements change per version
      if (v == 0 || (i * 2654435761u + static_cast<size_t>(v)) % 10 != 0) continue;
      mine[i] += 0.25f;
      want[i] += 0.25f;
    }
    auto w = comm.recv_async(got.data(), got.size(), DataType::float32, from, 9);
    require(comm.send(mine.data(), mine.size(), DataType::float32, to, 9), "send" + tag);
    require(w.wait(std::chrono::seconds(60)), "recv" + tag);
    wrong += std::memcmp(got.data(), want.data(), got.size() * 4) != 0;
  }
  check(wrong == 0, "send/recv" + tag + ": " + std::to_string(wrong) + " versions differ");
  const auto after = comm.compression_stats();
  const double ratio = static_cast<double>(after.wire_bytes - before.wire_bytes) /
                       static_cast<double>(after.payload_bytes - before.payload_bytes);
  if (me == 0)
    std::printf("%s point to point: wire %.1f%% of the payload\n", tag.c_str() + 1, 100 * ratio);
  check(ratio < 0.9, "send/recv" + tag + " did not shrink: " + std::to_string(ratio));
  comm.set_compression(Compression::none);
}

void mixed(Communicator& comm) {
  const size_t count = 40000;
  // Rank 0 sends fp16, the others raw: the result stays within fp16's bound on every rank (the
  // ranks that round nothing may hold other bits than rank 0).
  comm.set_compression(comm.rank() == 0 ? Compression::fp16 : Compression::none);
  lossy_allreduce<float>(comm, Compression::fp16, ReduceOp::sum, count, "mixed", false);
  // Lossless codecs mixed: exact.
  comm.set_compression(comm.rank() % 2 ? Compression::zstd : Compression::delta);
  auto send = inputs_of<float>(comm.rank(), count);
  std::vector<float> a(count), b(count);
  require(comm.allreduce(send.data(), a.data(), count, DataType::float32, ReduceOp::max),
          "mixed lossless");
  comm.set_compression(Compression::none);
  require(comm.allreduce(send.data(), b.data(), count, DataType::float32, ReduceOp::max),
          "mixed none");
  check(a == b, "mixed lossless codecs changed a result");
}

void scope(Communicator& comm) {
  std::vector<float> send = inputs_of<float>(comm.rank(), 100000), recv(100000);
  comm.set_compression(Compression::none);
  auto s0 = comm.compression_stats();
  {
    // zstd: forced, it compresses within a host too (fp16 frames go between hosts only).
    Communicator::CompressionScope zstd(comm, Compression::zstd);
    check(comm.compression_in_force() == Compression::zstd, "scope not in force");
    require(comm.allreduce(send.data(), recv.data(), send.size(), DataType::float32, ReduceOp::sum),
            "allreduce in a scope");
  }
  auto s1 = comm.compression_stats();
  require(comm.allreduce(send.data(), recv.data(), send.size(), DataType::float32, ReduceOp::sum),
          "allreduce after the scope");
  auto s2 = comm.compression_stats();
  check(s1.compressed_frames > s0.compressed_frames, "the scope compressed nothing");
  check(s2.compressed_frames == s1.compressed_frames, "compressed after the scope ended");
  check(comm.compression_in_force() == Compression::none, "scope still in force");
}

void feedback(Communicator& comm) {
  // Mean of 32 fp16 allreduces of one input: with error feedback the rounding errors cancel.
  const size_t count = 4096;
  auto send = inputs_of<float>(comm.rank(), count);
  std::vector<float> recv(count);
  std::vector<double> mean(count, 0);
  for (int k = 0; k < 32; ++k) {
    require(comm.allreduce(send.data(), recv.data(), count, DataType::float32, ReduceOp::sum),
            "allreduce with feedback");
    for (size_t i = 0; i < count; ++i) mean[i] += recv[i] / 32.0;
  }
  double err_mean = 0, err_one = 0;
  for (size_t i = 0; i < count; ++i) {
    double abs_sum;
    const double want = exact(ReduceOp::sum, comm.size(), i, &abs_sum);
    err_mean += std::fabs(mean[i] - want);
    err_one += std::fabs(static_cast<double>(recv[i]) - want);
  }
  if (comm.rank() == 0)
    std::printf("error feedback: mean error %.3g of one call's %.3g\n", err_mean / count,
                err_one / count);
  check(err_mean < err_one / 2, "error feedback did not reduce the mean error");
}

}  // namespace

int main(int argc, char** argv) {
  const bool with_feedback = argc > 1 && std::string(argv[1]) == "--feedback";
  auto env = hcomm::Config::from_env();
  if (!env) {
    std::fprintf(stderr, "%s\n", env.status().to_string().c_str());
    return 2;
  }
  if (with_feedback) {
    hcomm::Config cfg = *env;
    cfg.compression = Compression::fp16;
    cfg.comp_error_feedback = true;
    auto comm = Communicator::create(cfg);
    if (!comm) return std::fprintf(stderr, "%s\n", comm.status().to_string().c_str()), 2;
    feedback(**comm);
  } else {
    // One communicator per algorithm the library has, and one that chooses.
    std::vector<std::string> algos = {"auto"};
    for (const std::string& a : hcomm::collectives::algorithm_names()) algos.push_back(a);
    // The automatic communicator lives throughout (it keeps the process's runtime, and with it
    // rank 0's rendezvous store, up between the others).
    std::unique_ptr<Communicator> automatic;
    for (const std::string& algo : algos) {
      hcomm::Config cfg = *env;
      cfg.algo = algo == "auto" ? "" : algo;
      auto comm = Communicator::create(cfg);
      if (!comm) return std::fprintf(stderr, "%s\n", comm.status().to_string().c_str()), 2;
      if (env->rank == 0) std::printf("algorithm %s: %d checks so far\n", algo.c_str(), checks);
      std::fflush(stdout);
      for (Compression c : {Compression::fp16, Compression::bf16}) {
        (*comm)->set_compression(c);
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max})
          for (size_t count : {size_t{300}, size_t{70001}}) {
            lossy_allreduce<float>(**comm, c, op, count, algo);
            lossy_allreduce<double>(**comm, c, op, count, algo);
          }
        if (algo == "auto") lossy_movement(**comm, c);
      }
      if (algo == "auto") {
        lossless(**comm, Compression::zstd);
        lossless(**comm, Compression::delta);
        mixed(**comm);
        scope(**comm);
        (*comm)->set_compression(Compression::automatic);
        const std::string why = (*comm)->compression_for(1 << 20, DataType::float32,
                                                         ((*comm)->rank() + 1) % (*comm)->size());
        const bool one_host = (*comm)->ranks()[0].host_id == (*comm)->ranks().back().host_id;
        if (one_host)
          check(why.rfind("none: auto never compresses within a host", 0) == 0,
                "auto on one host: " + why);
        else if ((*comm)->rank() == 0)
          std::printf("auto across hosts: %s\n", why.c_str());
        automatic = std::move(*comm);
      }
    }
  }
  std::printf("rank %d: %d checks, %d failures\n", env->rank, checks, failures);
  return failures == 0 ? 0 : 1;
}
