// The three operations hcomm-chaos runs (float32): allreduce (sum), broadcast, allgather.
#include "chaos/workload.hpp"

#include <cstring>
#include <new>

#include "reference/reduction.hpp"

namespace hcomm::tools::chaos {
namespace {

constexpr uint32_t kSentinelBits = 0x7fc0deadu;  // a quiet NaN no operation produces

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float sentinel() {
  float f;
  std::memcpy(&f, &kSentinelBits, sizeof f);
  return f;
}

}  // namespace

Workload::Buffer Workload::allocate(size_t elems) {
  // Page-aligned, as an application should allocate for RDMA (registered once, sent in place).
  constexpr size_t kAlign = 4096;
  const size_t bytes = (elems * sizeof(float) + kAlign - 1) / kAlign * kAlign;
  auto* p = static_cast<float*>(std::aligned_alloc(kAlign, bytes == 0 ? kAlign : bytes));
  if (p == nullptr) throw std::bad_alloc();
  return Buffer(p);
}

Workload::Workload(const Options& o, int rank, int world_size)
    : op_(o.op),
      rank_(rank),
      n_(world_size),
      root_(o.root),
      data_(o.data),
      lossy_(o.compression == Compression::fp16 || o.compression == Compression::bf16),
      pattern_(o.data, o.seed) {
  const size_t elems = o.bytes / sizeof(float);
  if (op_ == "allgather") {
    count_ = elems / static_cast<size_t>(n_);
    send_elems_ = count_;
    result_elems_ = count_ * static_cast<size_t>(n_);
  } else {
    count_ = elems;
    send_elems_ = op_ == "allreduce" ? count_ : 0;
    result_elems_ = count_;
  }
  if (count_ == 0)
    usage_error("-b " + std::to_string(o.bytes) + ": too small for one float32 per rank block");
  if (op_ == "broadcast" && root_ >= n_)
    usage_error("-r " + std::to_string(root_) + ": only " + std::to_string(n_) + " ranks");
  if (send_elems_ > 0) send_ = allocate(send_elems_);
  recv_ = allocate(result_elems_);
}

bool Workload::checks_elements() const {
  if (lossy_) return false;  // rounded on the wire: the digest tells
  return data_ == DataMode::exact || op_ != "allreduce" || n_ <= 2;
}

void Workload::prepare(uint64_t it) {
  float* recv = recv_.get();
  const float nan = sentinel();
  for (size_t k = 0; k < result_elems_; ++k) recv[k] = nan;
  if (op_ == "broadcast") {
    if (rank_ == root_)
      for (size_t k = 0; k < count_; ++k) recv[k] = pattern_.value(rank_, it, k);
    return;
  }
  float* send = send_.get();
  for (size_t k = 0; k < send_elems_; ++k) send[k] = pattern_.value(rank_, it, k);
}

Work Workload::start(Communicator& comm) {
  if (op_ == "broadcast")
    return comm.broadcast_async(recv_.get(), count_, DataType::float32, root_);
  if (op_ == "allgather")
    return comm.allgather_async(send_.get(), recv_.get(), count_, DataType::float32);
  return comm.allreduce_async(send_.get(), recv_.get(), count_, DataType::float32, ReduceOp::sum);
}

float Workload::expected(uint64_t it, size_t k) const {
  if (op_ == "broadcast") return pattern_.value(root_, it, k);
  if (op_ == "allgather") return pattern_.value(static_cast<int>(k / count_), it, k % count_);
  // Exact integers: any order gives this sum. Random data: only checked on <= 2 ranks, where
  // a + b, rounded once to float32, is the one possible result.
  const double sum = reference::reduction(DataType::float32, ReduceOp::sum, n_, [&](int r) {
                       return static_cast<double>(pattern_.value(r, it, k));
                     }).value;
  return static_cast<float>(reference::round_to(DataType::float32, sum));
}

std::optional<Mismatch> Workload::verify(uint64_t it) const {
  if (!checks_elements()) return std::nullopt;
  const float* recv = recv_.get();
  std::optional<Mismatch> bad;
  for (size_t k = 0; k < result_elems_; ++k) {
    const float want = expected(it, k);
    if (bits(recv[k]) == bits(want)) continue;
    if (!bad) bad = Mismatch{it, k, 0, recv[k], want};
    ++bad->wrong;
  }
  return bad;
}

}  // namespace hcomm::tools::chaos
