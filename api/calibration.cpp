// Link calibration at communicator creation: ranks 0 and 1 time ping-pongs of a small and a
// large message over the communicator's own data plane (so the figures include hcomm's software
// path, not just the kernel's), rank 0 times its reduction kernel, and broadcasts the three
// figures so that every rank's cost model — and so every rank's algorithm choice — is the same.
#include <algorithm>
#include <chrono>
#include <climits>
#include <vector>

#include "api/communicator_impl.hpp"
#include "collectives/reduce_kernels.hpp"
#include "log/log.hpp"

namespace hcomm::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kReservedTag = INT_MAX;  // user tags stop below it
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
  coll::LinkCost cost;
  std::vector<double> figures(3, 0.0);
  auto transfer = [&](coll::OpKind kind, std::vector<std::byte>& buf) {
    auto op = std::make_shared<coll::Operation>();
    op->kind = kind;
    op->dtype = DataType::uint8;
    op->count = buf.size();
    if (kind == coll::OpKind::send)
      op->send = buf.data();
    else
      op->recv = buf.data();
    op->peer = 1 - rank();
    op->tag = kReservedTag;
    return run(std::move(op));
  };
  // One-way time of `bytes`: half the median round trip, measured on rank 0.
  auto one_way_us = [&](size_t bytes, int warmup, int rounds, double* out) -> Status {
    std::vector<std::byte> buf(bytes);
    std::vector<double> trips;
    for (int i = 0; i < warmup + rounds; ++i) {
      const auto t0 = Clock::now();
      const bool first = rank() == 0;
      Status s = transfer(first ? coll::OpKind::send : coll::OpKind::recv, buf);
      if (s.ok()) s = transfer(first ? coll::OpKind::recv : coll::OpKind::send, buf);
      if (!s.ok()) return s;
      if (i >= warmup) trips.push_back(seconds_to_us(Clock::now() - t0));
    }
    *out = median(trips) / 2;
    return {};
  };
  if (rank() <= 1) {
    double small_us = 0, large_us = 0;
    Status s = one_way_us(kSmall, 5, 31, &small_us);
    if (s.ok()) s = one_way_us(kLarge, 1, 5, &large_us);
    if (!s.ok()) return s;
    figures[0] = std::max(0.5, small_us);
    figures[1] = std::max(1e-5, (large_us - figures[0]) / kLarge);
  }
  if (rank() == 0) {
    std::vector<float> a(kLarge / sizeof(float), 1.0f), b(a.size(), 2.0f);
    std::vector<double> runs;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = Clock::now();
      coll::reduce_into(a.data(), b.data(), a.size(), DataType::float32, ReduceOp::sum);
      runs.push_back(seconds_to_us(Clock::now() - t0));
    }
    figures[2] = std::max(1e-6, median(runs) / kLarge);
  }
  auto op = std::make_shared<coll::Operation>();
  op->kind = coll::OpKind::broadcast;
  op->dtype = DataType::float64;
  op->count = figures.size();
  op->send = op->recv = reinterpret_cast<std::byte*>(figures.data());
  op->root = 0;
  Status s = run(std::move(op));
  if (!s.ok()) return s;
  cost.alpha_us = figures[0];
  cost.beta_us_per_byte = figures[1];
  cost.gamma_us_per_byte = figures[2];
  make_selector(cost);
  HCOMM_LOG(info, log::kInit, "link cost (measured): %s", cost.to_string().c_str());
  return {};
}

}  // namespace hcomm::detail
