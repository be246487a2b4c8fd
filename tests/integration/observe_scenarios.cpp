// The misbehaving ranks the observability tests diagnose (tests/integration/observe.sh): a loop
// of allreduces in which one rank does something wrong, every result checked against the sum.
//   skip RANK SLEEP_MS        RANK sleeps before operation 5 (the others wait for it)
//   mismatch RANK             RANK calls broadcast where the others call allreduce (operation 5)
//   straggler RANK DELAY_MS   RANK enters every operation DELAY_MS late
//   late-once RANK DELAY_MS   RANK enters operation 500 of 1000 DELAY_MS late
// Prints "ENTER <op> <wall clock ms>" on every rank before the operation that goes wrong, and
// "DONE <passed> <failed>" at the end. Exit 0 when every result that should be right is.
#include <hcomm/hcomm.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/checks.hpp"

namespace {

using checks::check;

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void sleep_ms(long ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

/// One allreduce of 1024 floats, its result checked; returns its status.
hcomm::Status checked_allreduce(hcomm::Communicator& comm, int op) {
  const size_t n = 1024;
  std::vector<float> in(n), out(n, -1.0f);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<float>(comm.rank() + op + i % 5);
  hcomm::Status st =
      comm.allreduce(in.data(), out.data(), n, hcomm::DataType::float32, hcomm::ReduceOp::sum);
  if (st.ok()) {
    const int s = comm.size();
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i)
      wrong += out[i] != static_cast<float>(s * (s - 1) / 2 + s * (op + static_cast<int>(i % 5)));
    check(wrong == 0, "allreduce " + std::to_string(op) + ": " + std::to_string(wrong) + " wrong");
  }
  return st;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: observe_scenarios skip|mismatch|straggler|late-once RANK [MS]\n");
    return 2;
  }
  const std::string scenario = argv[1];
  const int who = std::atoi(argv[2]);
  const long ms = argc > 3 ? std::atol(argv[3]) : 0;
  auto created = hcomm::Communicator::create_from_env();
  if (!created) {
    std::fprintf(stderr, "cannot create the communicator: %s\n",
                 created.status().to_string().c_str());
    return 1;
  }
  hcomm::Communicator& comm = **created;
  const bool me = comm.rank() == who;
  const int ops = scenario == "late-once" ? 1000 : scenario == "straggler" ? 40 : 8;
  const int bad = scenario == "late-once" ? 500 : 5;
  for (int op = 1; op <= ops; ++op) {
    if (op == bad) std::printf("ENTER %d %lld\n", op, wall_ms()), std::fflush(stdout);
    if (me && ((scenario == "skip" && op == bad) || scenario == "straggler" ||
               (scenario == "late-once" && op == bad)))
      sleep_ms(ms);
    if (scenario == "mismatch" && op == bad) {
      std::vector<float> buf(1024, 1.0f);
      hcomm::Status st = me ? comm.broadcast(buf.data(), buf.size(), hcomm::DataType::float32, 0)
                            : comm.allreduce(buf.data(), buf.data(), buf.size(),
                                             hcomm::DataType::float32, hcomm::ReduceOp::sum);
      std::printf("MISMATCHED %s\n", st.to_string().c_str());
      break;  // what follows a mismatch is not this test's business
    }
    hcomm::Status st = checked_allreduce(comm, op);
    check(st.ok(), "allreduce " + std::to_string(op) + ": " + st.to_string());
    if (!st.ok()) break;
  }
  std::printf("DONE %d %d\n", checks::passed, checks::failed);
  return checks::failed == 0 ? 0 : 1;
}
