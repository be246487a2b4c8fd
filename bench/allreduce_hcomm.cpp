// Times an out-of-place float32 sum allreduce with hcomm; the MPI twin is allreduce_mpi.c and the
// two must stay measurement-for-measurement alike so that compare_mpi.sh compares like with like.
//
// Usage: hcomm-run -n RANKS allreduce_hcomm [-w WARMUP] [-n ITERS] BYTES...
// Prints on rank 0, per size: "hcomm allreduce bytes=<B> median_us=<t> wrong=<k>", where t is the
// median over ITERS separately timed iterations (rank 0's clock; a barrier precedes each one) and
// k counts wrong elements over all timed iterations and all ranks.
#include <hcomm/hcomm.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const char* what, const hcomm::Status& st) {
  std::fprintf(stderr, "allreduce_hcomm: %s: %s\n", what, st.to_string().c_str());
  std::exit(1);
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: allreduce_hcomm [-w WARMUP] [-n ITERS] BYTES...\n"
                       "BYTES: positive multiples of 4 (float32 elements)\n");
  std::exit(2);
}

// Runs one size and prints its line on rank 0.
void run_size(hcomm::Communicator& comm, size_t bytes, int warmup, int iters) {
  const size_t count = bytes / sizeof(float);
  const int rank = comm.rank(), size = comm.size();
  // Small integers, so every partial sum is exact in float32 whatever the reduction order.
  std::vector<float> send(count), recv(count);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(rank + 1 + i % 5);
  auto allreduce = [&] {
    hcomm::Status st = comm.allreduce(send.data(), recv.data(), count, hcomm::DataType::float32,
                                      hcomm::ReduceOp::sum);
    if (!st.ok()) fail("allreduce", st);
  };
  auto barrier = [&] {
    hcomm::Status st = comm.barrier();
    if (!st.ok()) fail("barrier", st);
  };

  for (int it = 0; it < warmup; ++it) allreduce();

  std::vector<double> us(iters);
  int64_t wrong = 0;
  for (int it = 0; it < iters; ++it) {
    // NaN never equals an expected value, so an allreduce that leaves recv untouched is caught.
    std::fill(recv.begin(), recv.end(), std::nanf(""));
    barrier();
    auto t0 = Clock::now();
    allreduce();
    us[it] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    for (size_t i = 0; i < count; ++i) {
      const float expected = static_cast<float>(size * (size + 1) / 2 + size * (i % 5));
      if (recv[i] != expected) ++wrong;
    }
  }

  // Summed with the library under test: a broken reduction shows up in the float data above long
  // before it could hide a count, and a failing one exits with its status.
  int64_t wrong_all = 0;
  hcomm::Status st =
      comm.allreduce(&wrong, &wrong_all, 1, hcomm::DataType::int64, hcomm::ReduceOp::sum);
  if (!st.ok()) fail("allreduce of the wrong counts", st);

  std::nth_element(us.begin(), us.begin() + iters / 2, us.end());
  if (rank == 0)
    std::printf("hcomm allreduce bytes=%zu median_us=%.2f wrong=%lld\n", bytes, us[iters / 2],
                static_cast<long long>(wrong_all));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int warmup = 5, iters = 20;
  std::vector<size_t> sizes;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "-w") == 0 && a + 1 < argc) {
      warmup = std::atoi(argv[++a]);
    } else if (std::strcmp(argv[a], "-n") == 0 && a + 1 < argc) {
      iters = std::atoi(argv[++a]);
    } else {
      char* end = nullptr;
      unsigned long long b = std::strtoull(argv[a], &end, 10);
      if (*end != '\0' || b == 0 || b % sizeof(float) != 0) usage();
      sizes.push_back(static_cast<size_t>(b));
    }
  }
  if (sizes.empty() || warmup < 0 || iters < 1) usage();

  auto created = hcomm::Communicator::create_from_env();
  if (!created) fail("cannot create the communicator", created.status());
  for (size_t bytes : sizes) run_size(**created, bytes, warmup, iters);
  return 0;
}
