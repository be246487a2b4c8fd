// Point-to-point: every rank passes a token around the ring, then rank 0 checks it.
// Run: hcomm-run -n 3 ./example_send_recv
#include <hcomm/hcomm.hpp>

#include <cstdio>
#include <vector>

int main() {
  auto created = hcomm::Communicator::create_from_env();
  if (!created) {
    std::fprintf(stderr, "cannot create the communicator: %s\n",
                 created.status().to_string().c_str());
    return 1;
  }
  hcomm::Communicator& comm = **created;
  const int rank = comm.rank(), size = comm.size();
  if (size < 2) {
    std::printf("send_recv needs at least 2 ranks\n");
    return 0;
  }
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  std::vector<int64_t> token(1000);
  if (rank == 0) {
    for (size_t i = 0; i < token.size(); ++i) token[i] = static_cast<int64_t>(i);
    hcomm::Status st = comm.send(token.data(), token.size(), hcomm::DataType::int64, next);
    if (st.ok()) st = comm.recv(token.data(), token.size(), hcomm::DataType::int64, prev);
    if (!st.ok()) {
      std::fprintf(stderr, "rank 0: %s\n", st.to_string().c_str());
      return 1;
    }
    bool good = true;  // every other rank added its rank to each element
    const int64_t added = static_cast<int64_t>(size) * (size - 1) / 2;
    for (size_t i = 0; i < token.size(); ++i) good &= token[i] == static_cast<int64_t>(i) + added;
    std::printf("token went around %d ranks: %s\n", size, good ? "VERIFIED" : "WRONG");
    return good ? 0 : 1;
  }
  // Post the receive first, as one would overlap it with other work.
  hcomm::Work in = comm.recv_async(token.data(), token.size(), hcomm::DataType::int64, prev);
  hcomm::Status st = in.wait(comm.config().op_timeout);
  if (st.ok()) {
    for (auto& v : token) v += rank;
    st = comm.send(token.data(), token.size(), hcomm::DataType::int64, next);
  }
  if (!st.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, st.to_string().c_str());
    return 1;
  }
  return 0;
}
