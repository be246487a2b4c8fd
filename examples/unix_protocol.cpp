// An application's own transport: registers the Unix-socket protocol of unix_protocol.hpp, runs
// an allreduce and a broadcast over it and checks both.
// Run: hcomm-run -n 4 ./example_unix_protocol
// (It forces HCOMM_TRANSPORT=unix unless the environment names a transport: left to choose,
// hcomm would prefer its own shared memory between ranks of one host.)
#include <hcomm/hcomm.hpp>
#include <hcomm/protocol.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "unix_protocol.hpp"

// At program start, before any communicator exists.
HCOMM_REGISTER_PROTOCOL("unix", example::UnixSocketProtocol);

namespace {

void print_protocols() {
  std::printf("registered protocols, most preferred first:\n");
  for (const std::string& name : hcomm::registered_protocols()) {
    auto caps = hcomm::protocol_caps(name);
    if (!caps) continue;
    const std::string max_message = caps->max_message_bytes == SIZE_MAX
                                        ? "any size"
                                        : std::to_string(caps->max_message_bytes) + " bytes";
    std::printf("  %-6s messages of %s%s%s%s\n", name.c_str(), max_message.c_str(),
                caps->one_sided ? ", one-sided" : "",
                caps->detects_peer_failure ? ", detects peer failure" : "",
                caps->same_host_only ? ", same host only" : "");
  }
}

// Rank r contributes (r + 1) * (1 + i % 13) at element i: small integers, so the float sum is
// exact whatever order the ranks' values are added in.
float contribution(int rank, size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(1 + i % 13));
}

uint32_t broadcast_value(int root, size_t i) {
  return static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(root);
}

}  // namespace

int main() {
  auto config = hcomm::Config::from_env();
  if (!config) {
    std::fprintf(stderr, "bad configuration: %s\n", config.status().to_string().c_str());
    return 1;
  }
  if (std::getenv("HCOMM_TRANSPORT") == nullptr) config->transport = "unix";
  auto created = hcomm::Communicator::create(*config);
  if (!created) {
    std::fprintf(stderr, "cannot create the communicator: %s\n",
                 created.status().to_string().c_str());
    return 1;
  }
  hcomm::Communicator& comm = **created;
  const int rank = comm.rank(), size = comm.size();
  if (rank == 0) print_protocols();

  // Allreduce of 1M floats; the expected sums are added up here, rank by rank.
  const size_t count = size_t{1} << 20;
  std::vector<float> data(count), result(count);
  for (size_t i = 0; i < count; ++i) data[i] = contribution(rank, i);
  hcomm::Status st = comm.allreduce(data.data(), result.data(), count, hcomm::DataType::float32,
                                    hcomm::ReduceOp::sum);
  if (!st.ok()) {
    std::fprintf(stderr, "rank %d: allreduce failed: %s\n", rank, st.to_string().c_str());
    return 1;
  }
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float expected = 0;
    for (int r = 0; r < size; ++r) expected += contribution(r, i);
    if (result[i] != expected) ++wrong;
  }

  // Broadcast from the last rank (not rank 0, so that the root's role is really tested).
  const int root = size - 1;
  std::vector<uint32_t> values(300000, 0);
  if (rank == root)
    for (size_t i = 0; i < values.size(); ++i) values[i] = broadcast_value(root, i);
  st = comm.broadcast(values.data(), values.size(), hcomm::DataType::int32, root);
  if (!st.ok()) {
    std::fprintf(stderr, "rank %d: broadcast failed: %s\n", rank, st.to_string().c_str());
    return 1;
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] != broadcast_value(root, i)) ++wrong;

  for (const hcomm::RankInfo& peer : comm.ranks())
    if (peer.rank != rank)
      std::printf("rank %d -> rank %d: %s\n", rank, peer.rank, peer.transport.c_str());
  if (wrong != 0) {
    std::printf("rank %d: %zu wrong elements\n", rank, wrong);
    return 1;
  }
  if (rank == 0)
    std::printf("allreduce of %zu floats and broadcast of %zu values on %d ranks: VERIFIED\n",
                count, values.size(), size);
  return 0;
}
