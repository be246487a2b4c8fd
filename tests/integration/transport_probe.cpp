// transport_probe: what every rank sees of every other: its host name, its host id and the
// transport of the link to it (Communicator::ranks()), after a checked allreduce has gone over
// every link. For scripts that check a layout (netns_hosts.sh); one line per pair:
//   "probe R -> P transport T host H"
// Exits non-zero if the communicator cannot be created or the allreduce is wrong.
// `transport_probe --stay MS` then keeps the communicator MS ms longer, in barriers every 20 ms,
// and exits non-zero when one fails (the job was aborted meanwhile).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <hcomm/hcomm.hpp>

int main(int argc, char** argv) {
  const long stay_ms = argc > 2 && std::strcmp(argv[1], "--stay") == 0 ? std::atol(argv[2]) : 0;
  auto created = hcomm::Communicator::create_from_env();
  if (!created) {
    std::fprintf(stderr, "transport_probe: cannot create the communicator: %s\n",
                 created.status().to_string().c_str());
    return 1;
  }
  hcomm::Communicator& comm = **created;
  const int rank = comm.rank(), size = comm.size();

  // Traffic over every link: an allreduce (any algorithm) plus a direct alltoall.
  const size_t count = 4099;
  std::vector<int32_t> data(count, rank + 1), sum(count, -1);
  hcomm::Status st =
      comm.allreduce(data.data(), sum.data(), count, hcomm::DataType::int32, hcomm::ReduceOp::sum);
  if (!st.ok()) {
    std::fprintf(stderr, "transport_probe: allreduce failed: %s\n", st.to_string().c_str());
    return 1;
  }
  for (size_t i = 0; i < count; ++i) {
    if (sum[i] != size * (size + 1) / 2) {
      std::fprintf(stderr, "transport_probe: allreduce element %zu is %d, expected %d\n", i, sum[i],
                   size * (size + 1) / 2);
      return 1;
    }
  }
  std::vector<int32_t> out(static_cast<size_t>(size), rank), in(static_cast<size_t>(size), -1);
  st = comm.alltoall(out.data(), in.data(), 1, hcomm::DataType::int32);
  if (!st.ok()) {
    std::fprintf(stderr, "transport_probe: alltoall failed: %s\n", st.to_string().c_str());
    return 1;
  }
  for (int r = 0; r < size; ++r) {
    if (in[static_cast<size_t>(r)] != r) {
      std::fprintf(stderr, "transport_probe: alltoall block %d is %d\n", r,
                   in[static_cast<size_t>(r)]);
      return 1;
    }
  }

  for (const auto& r : comm.ranks())
    std::printf("probe %d -> %d transport %s host %s\n", rank, r.rank, r.transport.c_str(),
                r.host.c_str());
  std::fflush(stdout);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(stay_ms);
  while (std::chrono::steady_clock::now() < until) {
    st = comm.barrier();
    if (!st.ok()) {
      std::fprintf(stderr, "transport_probe: barrier failed: %s\n", st.to_string().c_str());
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}
