// Allreduce across the ranks of a job, checked, timed. Run: hcomm-run -n 4 ./example_allreduce
#include <hcomm/hcomm.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  size_t count =
      argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t{16} << 20) / sizeof(float);
  auto created = hcomm::Communicator::create_from_env();  // HCOMM_RANK, HCOMM_WORLD_SIZE, ...
  if (!created) {
    std::fprintf(stderr, "cannot create the communicator: %s\n",
                 created.status().to_string().c_str());
    return 1;
  }
  hcomm::Communicator& comm = **created;
  const int rank = comm.rank(), size = comm.size();

  // Rank r contributes r + 1 + (i % 7) at element i.
  std::vector<float> data(count), result(count);
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>(rank + 1 + i % 7);

  hcomm::Status st = comm.allreduce(data.data(), result.data(), count, hcomm::DataType::float32,
                                    hcomm::ReduceOp::sum);  // warm-up and check
  if (!st.ok()) {
    std::fprintf(stderr, "allreduce failed: %s\n", st.to_string().c_str());
    return 1;
  }
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float expected = static_cast<float>(size * (size + 1) / 2 + size * static_cast<int>(i % 7));
    if (result[i] != expected) ++wrong;
  }

  const int iters = 10;
  auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < iters && st.ok(); ++it)
    st = comm.allreduce(data.data(), result.data(), count, hcomm::DataType::float32,
                        hcomm::ReduceOp::sum);
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
  if (!st.ok()) {
    std::fprintf(stderr, "allreduce failed: %s\n", st.to_string().c_str());
    return 1;
  }
  const double bytes = static_cast<double>(count * sizeof(float));
  const double busbw = bytes / sec * 2.0 * (size - 1) / size / 1e9;
  if (rank == 0)
    std::printf("allreduce of %zu floats on %d ranks: %s (%zu wrong), %.3f ms, busbw %.2f GB/s\n",
                count, size, wrong == 0 ? "VERIFIED" : "WRONG", wrong, sec * 1e3, busbw);
  else if (wrong != 0)
    std::printf("rank %d: %zu wrong elements\n", rank, wrong);
  return wrong == 0 ? 0 : 1;
}
