#include "collectives/algorithm_selector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "collectives/algorithms.hpp"

namespace hcomm::collectives {
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

/// A ring step's chunk: about a quarter of the step, within [256 KiB, 4 MiB]. Below that, each
/// frame's software cost on both ends outweighs the pipelining it buys.
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
                                     size_t chunk_override, int hosts, int largest_host,
                                     std::optional<LinkCost> local_cost)
    : n_(world_size),
      hosts_(std::max(1, hosts)),
      largest_host_(largest_host > 0 ? largest_host : world_size),
      cost_(cost),
      local_(local_cost.value_or(cost)),
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
  // The hierarchical algorithms: `hosts_` hosts, the largest of `largest_host_` ranks, whose
  // links cost `local_` (al, bl) where those between hosts cost `cost_` (a, b).
  const double H = hosts_, L = largest_host_;
  const double al = local_.alpha_us, bl = local_.beta_us_per_byte;
  // HierarchicalBroadcast: the buffer goes down the leaders' tree and then a host's, chunks
  // pipelining through both. Chains (from kRingBytes on) have (H-1) + (L-1) stages; a leader
  // sends each chunk both to the next leader and into its host, so its stage (the slowest)
  // costs both messages. Binomial trees: ceil(log2 H) rounds across hosts, then ceil(log2 L)
  // within the host, each the whole buffer.
  auto hier_broadcast = [&] {
    const bool across = hosts_ > 1, within = largest_host_ > 1;
    if (bytes_in < HierarchicalBroadcast::kRingBytes) {
      c.predicted_us = ceil_log2(hosts_) * (a + S * b) + ceil_log2(largest_host_) * (al + S * bl);
      return;
    }
    const double lead_fixed = (across ? a : 0) + (within ? al : 0);
    const double lead_per_byte = (across ? b : 0) + (within ? bl : 0);
    const double stages = (H - 1) + (L - 1);
    c.chunk_bytes = best_chunk(lead_fixed, lead_per_byte, stages, S);
    const double chunk = std::max(1.0, std::min(S, static_cast<double>(c.chunk_bytes)));
    const double m = std::max(1.0, std::ceil(S / chunk));
    c.predicted_us = (H - 1) * (a + chunk * b) + (L - 1) * (al + chunk * bl) +
                     (m - 1) * (lead_fixed + chunk * lead_per_byte);
  };
  // HierarchicalAllgather, blocks of `block` bytes: (1) the leader receives its host's other L-1
  // blocks at once; (2) the leaders exchange: each receives the blocks of the other hosts, about
  // n - n/H, in H-1 ring steps (from kRingBytes of gathered buffer on) or all at once; (3) the
  // leader passes the n-1 blocks down its host's chain (one message per chunk) or binomial tree.
  // The phases overlap in the schedule, but all of them go through the leader, which does every
  // send and receive: priced as their sum.
  auto hier_allgather = [&](double block) {
    const double remote = (n - n / H) * block, total = n * block;
    double t = 0;
    if (L > 1) t += al * (1 + 0.5 * (L - 2)) + (L - 1) * block * bl;
    if (H > 1) {
      if (total >= static_cast<double>(HierarchicalAllgather::kRingBytes)) {
        ring(H - 1, remote / (H - 1), b);
        t += c.predicted_us;
      } else {
        t += a * (1 + 0.5 * (H - 2)) + remote * b;
      }
    }
    if (L > 1) {
      if (total >= static_cast<double>(HierarchicalAllgather::kRingBytes)) {
        const double chunks = std::max(1.0, std::ceil(block / static_cast<double>(c.chunk_bytes)));
        t += (L - 1) * al + (n - 1) * chunks * al * kMessageShare + (n - 1) * block * bl;
      } else {
        t += ceil_log2(largest_host_) * (al + (n - 1) * block * bl);
      }
    }
    c.predicted_us = t;
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
          // uses at this size and the leaders' chunk. The local phases are priced with the
          // intra-host link's figures (local_cost; unless given, the one link kind measured, so
          // that the local phases only add time and hier rarely wins; with a cheaper intra-host
          // link it would when hosts are many).
          const Algorithm sub =
              bytes_in >= HierarchicalAllreduce::kRingBytes ? Algorithm::ring : Algorithm::rd;
          const Choice leaders =
              AlgorithmSelector(hosts_, cost_, {}, chunk_override_).predict(kind, sub, bytes_in);
          const AlgorithmSelector local(largest_host_, local_, {}, leaders.chunk_bytes);
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
      if (algo == Algorithm::hier && kind == OpKind::broadcast)
        hier_broadcast();
      else if (algo == Algorithm::ring)
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
      if (algo == Algorithm::hier && kind != OpKind::reduce_scatter) {
        hier_allgather(block);
      } else if (algo == Algorithm::ring) {
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

}  // namespace hcomm::collectives
