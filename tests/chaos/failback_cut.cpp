// failback_cut: the primary cut right after each fail-back, again and again (failback_cut.sh
// runs it as 2 ranks on two namespace hosts). Every rank runs allreduces back to back, each
// result checked element by element and timed. Rank 0 also injects, from a thread of its own:
// a first cut (DROP: the fabric dropped; the failover that must follow; the drop held for
// --hold-ms while traffic runs on the fallback; UNDROP), then --rounds times: as soon as its
// failover_stats() show the fail-back, the next cut. After the last fail-back rank 0 asks every
// rank to stop (a flag carried in the allreduce itself, so all ranks stop after the same
// iteration).
//
// Fails (exit 1) on: a wrong result, a failed operation, one that took longer than --max-op-ms,
// a round whose fail-back or failover did not come within its deadline, or a reconnection of a
// fallback link (it must stand by through every fail-back, not be made again). The script
// checks the ranks' logs for "no other link up".
//
// Usage: failback_cut --drop CMD --undrop CMD [--rounds N (10)] [--hold-ms MS (300)]
//                     [--count FLOATS (262144)] [--max-op-ms MS (3000)]
#include <hcomm/hcomm.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string drop, undrop;
  int rounds = 10;
  int hold_ms = 300;
  size_t count = 262144;
  int max_op_ms = 3000;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--drop") {
      o.drop = v;
    } else if (a == "--undrop") {
      o.undrop = v;
    } else if (a == "--rounds") {
      o.rounds = std::atoi(v.c_str());
    } else if (a == "--hold-ms") {
      o.hold_ms = std::atoi(v.c_str());
    } else if (a == "--count") {
      o.count = std::strtoull(v.c_str(), nullptr, 10);
    } else if (a == "--max-op-ms") {
      o.max_op_ms = std::atoi(v.c_str());
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !o.drop.empty() && !o.undrop.empty() && o.rounds > 0 && o.count > 1;
}

/// Rank 0's fault thread: failure() is the first problem, read once done().
class Injector {
 public:
  Injector(hcomm::Communicator& comm, const Options& o) : comm_(comm), o_(o) {}
  void run() {
    // The first cut makes the first failover; each round then waits for the fail-back that
    // follows the drop's end and cuts again at once. The last fail-back ends it.
    if (cut("the first cut"))
      for (int round = 1; round <= o_.rounds; ++round) {
        if (!failed_back("round " + std::to_string(round)) ||
            !cut("round " + std::to_string(round)))
          break;
        rounds_done_ = round;
      }
    if (rounds_done_ == o_.rounds) failed_back("the end");
    done_ = true;
  }
  bool done() const { return done_; }
  int rounds_done() const { return rounds_done_; }
  const std::string& failure() const { return failure_; }

 private:
  bool failed_back(const std::string& what) {
    const uint64_t failbacks = failbacks_seen_;
    if (!wait_for([&](const hcomm::FailoverStats& s) { return s.failbacks > failbacks; }, 30000,
                  what + ": no fail-back within 30 s"))
      return false;
    failbacks_seen_ = comm_.failover_stats().failbacks;
    return true;
  }
  /// Drops the fabric, waits for the failover, holds the drop, lifts it.
  bool cut(const std::string& what) {
    const uint64_t failovers = comm_.failover_stats().failovers;
    const auto t0 = Clock::now();
    if (std::system(o_.drop.c_str()) != 0) {
      failure_ = what + ": '" + o_.drop + "' failed";
      return false;
    }
    const bool moved =
        wait_for([&](const hcomm::FailoverStats& s) { return s.failovers > failovers; }, 10000,
                 what + ": no failover within 10 s of the cut");
    std::printf("[0] %s: fabric cut, failover after %.0f ms\n", what.c_str(),
                std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    std::fflush(stdout);
    if (moved) std::this_thread::sleep_for(std::chrono::milliseconds(o_.hold_ms));
    if (std::system(o_.undrop.c_str()) != 0 && failure_.empty()) {
      failure_ = what + ": '" + o_.undrop + "' failed";
      return false;
    }
    return moved;
  }
  template <typename Pred>
  bool wait_for(Pred pred, int ms, const std::string& why) {
    const auto until = Clock::now() + std::chrono::milliseconds(ms);
    while (Clock::now() < until) {
      if (pred(comm_.failover_stats())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    failure_ = why;
    return false;
  }

  hcomm::Communicator& comm_;
  const Options& o_;
  std::atomic<bool> done_{false};
  std::atomic<int> rounds_done_{0};
  uint64_t failbacks_seen_ = 0;
  std::string failure_;  // written by the thread, read after done()
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: failback_cut --drop CMD --undrop CMD [--rounds N] [--hold-ms MS] "
                 "[--count FLOATS] [--max-op-ms MS]\n");
    return 2;
  }
  auto created = hcomm::Communicator::create_from_env();
  if (!created) {
    std::fprintf(stderr, "failback_cut: %s\n", created.status().to_string().c_str());
    return 1;
  }
  hcomm::Communicator& comm = **created;
  const int rank = comm.rank(), size = comm.size();
  Injector injector(comm, o);
  std::thread faults;
  if (rank == 0) faults = std::thread([&] { injector.run(); });

  // Element i of rank r in iteration k: (r + 1) * ((k + i) % 251 + 1); the last element carries
  // the stop flag (rank 0 adds 1 once its faults are done).
  const size_t n = o.count;
  std::vector<float> send(n), recv(n);
  const float ranks_sum = static_cast<float>(size * (size + 1) / 2);
  int failures = 0;
  double longest_ms = 0;
  uint64_t k = 0;
  for (;; ++k) {
    for (size_t i = 0; i + 1 < n; ++i)
      send[i] = static_cast<float>(rank + 1) * static_cast<float>((k + i) % 251 + 1);
    send[n - 1] = rank == 0 && injector.done() ? 1.0f : 0.0f;
    const auto t0 = Clock::now();
    const hcomm::Status st =
        comm.allreduce(send.data(), recv.data(), n, hcomm::DataType::float32, hcomm::ReduceOp::sum);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    longest_ms = std::max(longest_ms, ms);
    if (!st.ok()) {
      std::fprintf(stderr, "[%d] allreduce %llu failed: %s\n", rank,
                   static_cast<unsigned long long>(k), st.to_string().c_str());
      ++failures;
      break;
    }
    size_t wrong = 0;
    for (size_t i = 0; i + 1 < n; ++i)
      wrong += recv[i] != ranks_sum * static_cast<float>((k + i) % 251 + 1);
    if (wrong > 0) {
      std::fprintf(stderr, "[%d] allreduce %llu: %zu of %zu elements wrong\n", rank,
                   static_cast<unsigned long long>(k), wrong, n - 1);
      ++failures;
    }
    if (ms > o.max_op_ms) {
      std::fprintf(stderr, "[%d] allreduce %llu took %.0f ms, more than --max-op-ms %d\n", rank,
                   static_cast<unsigned long long>(k), ms, o.max_op_ms);
      ++failures;
    }
    if (recv[n - 1] != 0.0f) break;
  }
  if (faults.joinable()) faults.join();

  const hcomm::FailoverStats s = comm.failover_stats();
  uint64_t fallback_remade = 0;
  for (const hcomm::LinkEvent& e : s.events)
    fallback_remade += e.kind == hcomm::LinkEvent::Kind::reconnect_attempt &&
                       e.from.find("fallback") != std::string::npos;
  std::printf(
      "[%d] %llu allreduces of %zu floats, longest %.0f ms; failovers %llu, failbacks "
      "%llu, reconnection attempts %llu (of a fallback: %llu), frames replayed %llu\n",
      rank, static_cast<unsigned long long>(k + 1), n, longest_ms,
      static_cast<unsigned long long>(s.failovers), static_cast<unsigned long long>(s.failbacks),
      static_cast<unsigned long long>(s.reconnect_attempts),
      static_cast<unsigned long long>(fallback_remade),
      static_cast<unsigned long long>(s.frames_replayed));
  if (fallback_remade > 0) {
    std::fprintf(stderr, "[%d] a fallback link was made again: it did not stand by\n", rank);
    ++failures;
  }
  if (rank == 0) {
    if (!injector.failure().empty()) {
      std::fprintf(stderr, "[0] %s\n", injector.failure().c_str());
      ++failures;
    }
    std::printf("[0] %d of %d rounds: fail-back, then the fabric cut at once\n",
                injector.rounds_done(), o.rounds);
    if (injector.rounds_done() != o.rounds) ++failures;
  }
  std::printf("[%d] failback_cut: %s\n", rank, failures == 0 ? "PASSED" : "FAILED");
  return failures == 0 ? 0 : 1;
}
