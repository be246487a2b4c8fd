#include "collectives/algorithm_selector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "collectives/algorithms.hpp"

namespace hcomm::coll {
namespace {

// Chunks below this cost more in per-frame work than pipelining saves; above the upper bound a
// chunk no longer overlaps anything useful and only delays the next stage.
constexpr double kMinChunk = 16 * 1024;
constexpr double kMaxChunk = 4 * 1024 * 1024;
// Algorithms that are not pipelined run with chunks this large: one frame per piece.
constexpr size_t kUnpipelinedChunk = 4 * 1024 * 1024;
// A message's own cost (headers, syscalls, matching) as a share of alpha, which also counts
// the wire's latency: what each extra chunk of a ring step adds.
constexpr double kMessageShare = 0.2;

/// A ring step's chunk: about a quarter of the step, within [256 KiB, 4 MiB]. Smaller chunks
/// measured slower on loopback TCP (each frame costs ~6 us of software on both ends).
size_t ring_chunk(double step_bytes) {
  const double c = std::clamp(step_bytes / 4, 256.0 * 1024, 4096.0 * 1024);
  const size_t page = 4096;
  return (static_cast<size_t>(c) + page - 1) / page * page;
}

int ceil_log2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}
int floor_log2(int n) {
  int l = 0;
  while ((2 << l) <= n) ++l;
  return l;
}

}  // namespace

std::string LinkCost::to_string() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "alpha %.2f us, beta %.3f GB/s, gamma %.3f GB/s", alpha_us,
                1e-3 / beta_us_per_byte, 1e-3 / gamma_us_per_byte);
  return buf;
}

AlgorithmSelector::AlgorithmSelector(int world_size, LinkCost cost, AlgorithmChoice forced,
                                     size_t chunk_override, int hosts, int largest_host)
    : n_(world_size),
      hosts_(std::max(1, hosts)),
      largest_host_(largest_host > 0 ? largest_host : world_size),
      cost_(cost),
      forced_(forced),
      chunk_override_(chunk_override) {}

// A pipeline of `stages` stages moving `bytes` in chunks of c, each stage costing
// fixed + c * per_byte, takes (stages + bytes/c - 1) * (fixed + c * per_byte); the minimum is at
// c = sqrt(fixed * bytes / ((stages - 1) * per_byte)).
size_t AlgorithmSelector::best_chunk(double fixed, double per_byte, double stages,
                                     double bytes) const {
  if (chunk_override_ != 0) return chunk_override_;
  double c = stages > 1 ? std::sqrt(fixed * bytes / ((stages - 1) * per_byte)) : bytes;
  c = std::clamp(c, kMinChunk, kMaxChunk);
  const size_t page = 4096;
  return (static_cast<size_t>(c) + page - 1) / page * page;
}

AlgorithmSelector::Choice AlgorithmSelector::predict(OpKind kind, Algorithm algo,
                                                     size_t bytes_in) const {
  const double a = cost_.alpha_us, b = cost_.beta_us_per_byte, g = cost_.gamma_us_per_byte;
  const double S = static_cast<double>(bytes_in);
  const int n = n_;
  const double d = ceil_log2(n);
  Choice c{algo, chunk_override_ != 0 ? chunk_override_ : kUnpipelinedChunk, 0.0};
  // Stages on different links (a chain, a tree): chunk k+1 crosses one link while chunk k
  // crosses the next, so the time is (stages + chunks - 1) chunk times.
  auto pipeline = [&](double stages, double bytes, double per_byte) {
    c.chunk_bytes = best_chunk(a, per_byte, stages, bytes);
    const double chunk = std::max(1.0, std::min(bytes, static_cast<double>(c.chunk_bytes)));
    const double m = std::max(1.0, std::ceil(bytes / chunk));
    c.predicted_us = (stages + m - 1) * (a + chunk * per_byte);
  };
  // A ring: every step crosses the same link out of each rank, so the bytes add up whatever the
  // chunking; chunks (a few per step) let reductions overlap the transfer and cost a message
  // each.
  auto ring = [&](double steps, double step_bytes, double per_byte) {
    c.chunk_bytes = chunk_override_ != 0 ? chunk_override_ : ring_chunk(step_bytes);
    const double m = std::max(1.0, std::ceil(step_bytes / static_cast<double>(c.chunk_bytes)));
    c.predicted_us =
        steps * a + steps * (m - 1) * a * kMessageShare + steps * step_bytes * per_byte;
  };
  if (n == 1) return c;
  const int p = 1 << floor_log2(n);  // the power of two that recursive algorithms fold onto
  const bool folded = p != n;
  switch (kind) {
    case OpKind::allreduce:
      switch (algo) {
        case Algorithm::ring:
          ring(2.0 * (n - 1), S / n, b + g / 2);
          break;
        case Algorithm::tree:
          // Two trees of depth ~log2 n, each with half, up then down; per chunk a rank moves
          // three chunks: two children's and its parent's in one tree, its own in the other.
          pipeline(2.0 * d, S / 2, 3 * b + g);
          break;
        case Algorithm::rd:
          c.predicted_us = (floor_log2(n) + (folded ? 2 : 0)) * (a + S * b) +
                           (floor_log2(n) + (folded ? 1 : 0)) * S * g;
          break;
        case Algorithm::hd:
          c.predicted_us = 2.0 * floor_log2(n) * a + 2.0 * (p - 1) / p * S * b +
                           1.0 * (p - 1) / p * S * g + (folded ? 2 * (a + S * b) + S * g : 0.0);
          break;
        case Algorithm::hier: {
          // Three phases, one after the other on each rank (the schedule joins them, so they do
          // not overlap): a reduce within the largest host to its leader, an allreduce among the
          // leaders, a broadcast within the host, each with the builder HierarchicalAllreduce
          // uses at this size and the leaders' chunk. There is one link kind today: every phase
          // is priced with the same alpha / beta / gamma, so the local phases only add time and
          // hier rarely wins; with a cheaper intra-host link it would when hosts are many.
          const Algorithm sub =
              bytes_in >= HierarchicalAllreduce::kRingBytes ? Algorithm::ring : Algorithm::rd;
          const Choice leaders =
              AlgorithmSelector(hosts_, cost_, {}, chunk_override_).predict(kind, sub, bytes_in);
          const AlgorithmSelector local(largest_host_, cost_, {}, leaders.chunk_bytes);
          c.chunk_bytes = leaders.chunk_bytes;
          c.predicted_us = local.predict(OpKind::reduce, sub, bytes_in).predicted_us +
                           leaders.predicted_us +
                           local.predict(OpKind::broadcast, sub, bytes_in).predicted_us;
          break;
        }
        default:
          break;
      }
      break;
    case OpKind::broadcast:
    case OpKind::reduce: {
      const double red = kind == OpKind::reduce ? g : 0.0;
      if (algo == Algorithm::ring)
        pipeline(n - 1.0, S, b + red);
      else if (algo == Algorithm::tree)
        pipeline(d, S / 2, 2 * (b + red));
      else if (algo == Algorithm::rd)
        c.predicted_us = d * (a + S * (b + red));
      break;
    }
    case OpKind::allgather:
    case OpKind::allgatherv:
    case OpKind::reduce_scatter: {
      const double per_byte = kind == OpKind::reduce_scatter ? b + g : b;
      const double block = kind == OpKind::allgatherv ? S / n : S;
      if (algo == Algorithm::ring) {
        ring(n - 1.0, block, per_byte);
      } else {  // direct: n-1 messages leave at once and share the sender
        c.predicted_us = a * (1 + 0.5 * (n - 2)) + (n - 1) * block * per_byte;
      }
      break;
    }
    case OpKind::alltoall:
    case OpKind::alltoallv:
    case OpKind::gather:
    case OpKind::scatter: {
      const double block = kind == OpKind::alltoallv ? S / n : S;
      c.predicted_us = a * (1 + 0.5 * (n - 2)) + (n - 1) * block * b;
      break;
    }
    case OpKind::barrier:
      c.predicted_us = d * a;
      break;
    case OpKind::send:
    case OpKind::recv:
      c.chunk_bytes = best_chunk(a, b, 1, S);
      c.predicted_us = a + S * b;
      break;
  }
  return c;
}

AlgorithmSelector::Choice AlgorithmSelector::choose(OpKind kind, size_t bytes) const {
  Algorithm forced = forced_.forced(kind);
  if (forced == Algorithm::automatic && kind == OpKind::allgatherv)
    forced = forced_.forced(OpKind::allgather);
  if (forced == Algorithm::automatic && kind == OpKind::alltoallv)
    forced = forced_.forced(OpKind::alltoall);
  if (forced != Algorithm::automatic && supports(kind, forced)) return predict(kind, forced, bytes);
  Choice best = predict(kind, default_algorithm(kind), bytes);
  for (int i = 1; i < kNumAlgorithms; ++i) {
    const auto algo = static_cast<Algorithm>(i);
    if (algo == best.algo || !supports(kind, algo)) continue;
    // Hierarchy pays only with several hosts, some of them holding several ranks.
    if (algo == Algorithm::hier && (hosts_ < 2 || largest_host_ < 2)) continue;
    Choice c = predict(kind, algo, bytes);
    if (c.predicted_us < best.predicted_us) best = c;
  }
  return best;
}

}  // namespace hcomm::coll
