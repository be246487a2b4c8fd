// Link calibration at communicator creation: rank 0 times ping-pongs of a small and a large
// message over the communicator's own data plane (so the figures include hcomm's software path,
// not just the kernel's) with a rank on another host and with one on its own host, where there
// are such ranks — the two link kinds (TCP across hosts, shared memory within) differ by an order
// of magnitude, and the hierarchical algorithms' phases use one each. Rank 0 also times its
// reduction kernel, and broadcasts the figures so that every rank's cost model — and so every
// rank's algorithm choice — is the same.
#include <algorithm>
#include <chrono>
#include <climits>
#include <optional>
#include <vector>

#include "api/communicator_impl.hpp"
#include "collectives/reduce_kernels.hpp"
#include "core/log.hpp"

namespace hcomm::api {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kSmall = 8;
constexpr size_t kLarge = 1 << 20;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_to_us(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

}  // namespace

Status CommunicatorImpl::calibrate() {
  if (size() == 1 || !cfg_.calibrate) return {};
  collectives::LinkCost cost;
  // alpha, beta (across hosts, or the one link kind), gamma, alpha and beta within rank 0's host
  // (0: no such link measured).
  std::vector<double> figures(5, 0.0);
  int remote_peer = -1, local_peer = -1;  // rank 0's partners
  for (int r = 1; r < size(); ++r) {
    const bool same = host_of_.empty() || host_of_[static_cast<size_t>(r)] == host_of_[0];
    int& slot = same ? local_peer : remote_peer;
    if (slot < 0) slot = r;
  }
  int peer = -1;  // who this rank ping-pongs with now
  auto transfer = [&](collectives::OpKind kind, std::vector<std::byte>& buf) {
    return reserved_transfer(kind, buf.data(), buf.size(), peer, true).wait(cfg_.op_timeout);
  };
  // One-way time of `bytes`: half the fastest round trip, measured on rank 0. Not the median:
  // at creation the peer's threads are still settling and the noise only ever adds, so medians
  // vary between runs enough to change the algorithm chosen.
  auto one_way_us = [&](size_t bytes, int warmup, int rounds, double* out) -> Status {
    std::vector<std::byte> buf(bytes);
    std::vector<double> trips;
    for (int i = 0; i < warmup + rounds; ++i) {
      const auto t0 = Clock::now();
      const bool first = rank() == 0;
      Status s = transfer(first ? collectives::OpKind::send : collectives::OpKind::recv, buf);
      if (s.ok()) s = transfer(first ? collectives::OpKind::recv : collectives::OpKind::send, buf);
      if (!s.ok()) return s;
      if (i >= warmup) trips.push_back(seconds_to_us(Clock::now() - t0));
    }
    *out = *std::min_element(trips.begin(), trips.end()) / 2;
    return {};
  };
  // Rank 0 with `partner`: alpha and beta into figures[at], figures[at + 1].
  auto measure = [&](int partner, size_t at) -> Status {
    if (partner < 0 || (rank() != 0 && rank() != partner)) return {};
    peer = rank() == 0 ? partner : 0;
    double small_us = 0, large_us = 0;
    Status s = one_way_us(kSmall, 20, 31, &small_us);
    if (s.ok()) s = one_way_us(kLarge, 1, 5, &large_us);
    if (!s.ok()) return s;
    figures[at] = std::max(0.05, small_us);
    figures[at + 1] = std::max(1e-6, (large_us - figures[at]) / kLarge);
    return {};
  };
  Status measured = measure(remote_peer >= 0 ? remote_peer : local_peer, 0);
  if (measured.ok() && remote_peer >= 0) measured = measure(local_peer, 3);
  if (!measured.ok()) return measured;
  if (rank() == 0) {
    std::vector<float> a(kLarge / sizeof(float), 1.0f), b(a.size(), 2.0f);
    std::vector<double> runs;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = Clock::now();
      collectives::reduce_into(a.data(), b.data(), a.size(), DataType::float32, ReduceOp::sum);
      runs.push_back(seconds_to_us(Clock::now() - t0));
    }
    figures[2] = std::max(1e-6, median(runs) / kLarge);
  }
  auto op = std::make_shared<collectives::Operation>();
  op->kind = collectives::OpKind::broadcast;
  op->dtype = DataType::float64;
  op->count = figures.size();
  op->send = op->recv = reinterpret_cast<std::byte*>(figures.data());
  op->root = 0;
  Status s = run(std::move(op));
  if (!s.ok()) return s;
  cost.alpha_us = figures[0];
  cost.beta_us_per_byte = figures[1];
  cost.gamma_us_per_byte = figures[2];
  std::optional<collectives::LinkCost> local;
  if (figures[3] > 0) {
    local = cost;
    local->alpha_us = figures[3];
    local->beta_us_per_byte = figures[4];
  }
  make_selector(cost, local);
  HCOMM_LOG(info, core::log::kInit, "link cost (measured): %s%s%s", cost.to_string().c_str(),
            local ? "; within a host: " : "", local ? local->to_string().c_str() : "");
  return {};
}

}  // namespace hcomm::api
