// Traffic whose bytes are recognisable on the wire, for tests/integration/tls.sh: rank 0
// broadcasts 4 MiB of a repeated ASCII marker, then every rank sends 1 MiB of it to the next
// rank (a ring of send/recv), then an int32 allreduce; every result is checked, ROUNDS times.
// Prints "DONE <passed> <failed>"; exits 0 when all were right, 1 otherwise (also when the
// communicator cannot be created: its status is printed).
#include <hcomm/hcomm.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/integration/checks.hpp"

namespace {

using checks::check;

constexpr char kMarker[] = "hcomm-plaintext-marker:";

std::vector<char> marker_bytes(size_t n) {
  std::vector<char> v(n);
  const size_t m = sizeof(kMarker) - 1;
  for (size_t i = 0; i < n; ++i) v[i] = kMarker[i % m];
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  auto created = hcomm::Communicator::create_from_env();
  if (!created) {
    std::printf("CREATE FAILED %s\n", created.status().to_string().c_str());
    return 1;
  }
  hcomm::Communicator& comm = **created;
  const int me = comm.rank(), n = comm.size();
  const std::vector<char> expected = marker_bytes(4 << 20);
  for (int round = 0; round < rounds; ++round) {
    std::vector<char> buf = me == 0 ? expected : std::vector<char>(expected.size(), 0);
    hcomm::Status st = comm.broadcast(buf.data(), buf.size(), hcomm::DataType::uint8, 0);
    check(st.ok() && buf == expected,
          "broadcast round " + std::to_string(round) + ": " + st.to_string());

    const size_t p2p = 1 << 20;
    std::vector<char> got(p2p, 0);
    hcomm::Work send = comm.send_async(expected.data(), p2p, hcomm::DataType::uint8, (me + 1) % n);
    hcomm::Status recvd = comm.recv(got.data(), p2p, hcomm::DataType::uint8, (me + n - 1) % n);
    hcomm::Status sent = send.wait(std::chrono::seconds(60));
    check(sent.ok() && recvd.ok() && std::memcmp(got.data(), expected.data(), p2p) == 0,
          "send/recv round " + std::to_string(round) + ": " + sent.to_string() + ", " +
              recvd.to_string());

    std::vector<int32_t> in(65536), out(65536, -1);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>(me * 1000 + i % 97);
    st = comm.allreduce(in.data(), out.data(), in.size(), hcomm::DataType::int32,
                        hcomm::ReduceOp::sum);
    size_t wrong = 0;
    for (size_t i = 0; i < out.size(); ++i)
      wrong += out[i] != static_cast<int32_t>(1000 * n * (n - 1) / 2 + n * (i % 97));
    check(st.ok() && wrong == 0, "allreduce round " + std::to_string(round) + ": " +
                                     st.to_string() + ", " + std::to_string(wrong) + " wrong");
  }
  std::printf("DONE %d %d\n", checks::passed, checks::failed);
  return checks::failed == 0 ? 0 : 1;
}
