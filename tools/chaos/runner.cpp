// The loop of hcomm-chaos (see runner.hpp).
#include "chaos/runner.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <thread>

#include "chaos/digest.hpp"

namespace hcomm::tools::chaos {
namespace {

constexpr size_t kMismatchesKept = 10;
// --seconds: the ranks vote on stopping about this often (rank 0 sets the number of iterations
// between votes from its iteration time), so that short operations do not pay a vote each.
constexpr double kVoteEverySeconds = 0.05;
// After aborting a hung communicator, how long its operation gets to complete (with an error).
constexpr auto kAfterAbort = std::chrono::seconds(10);

}  // namespace

const char* transport_name(const std::string& name) {
  return name.empty() ? "(no link)" : name.c_str();
}

std::string transports_text(const std::map<int, std::string>& transports) {
  std::string out;
  for (const auto& [peer, name] : transports)
    out += (out.empty() ? "" : ", ") + std::string("rank ") + std::to_string(peer) + " on " +
           transport_name(name);
  return out.empty() ? "no peers" : out;
}

const char* ending_name(Ending e) {
  switch (e) {
    case Ending::completed:
      return "completed";
    case Ending::peer_lost:
      return "peer_lost";
    case Ending::failed:
      return "failed";
    case Ending::hung:
      return "hung";
  }
  return "?";
}

Runner::Runner(Communicator& comm, const Options& o, Workload& w, Clock::time_point start)
    : comm_(comm),
      o_(o),
      w_(w),
      start_(start),
      op_limit_(o.max_op_ms
                    ? std::chrono::milliseconds(static_cast<int64_t>(std::ceil(*o.max_op_ms)))
                    : comm.config().op_timeout) {}

double Runner::since_start(Clock::time_point t) const {
  return std::chrono::duration<double>(t - start_).count();
}

std::map<int, std::string> Runner::transports() const {
  std::map<int, std::string> out;
  for (const RankInfo& r : comm_.ranks())
    if (r.rank != comm_.rank()) out[r.rank] = r.transport;
  return out;
}

void Runner::watch_transports(uint64_t iteration, std::map<int, std::string>* now, RunRecord* rec) {
  const double t = since_start(Clock::now());
  for (auto& [peer, name] : transports()) {
    std::string& was = (*now)[peer];
    if (name == was) continue;
    std::printf("rank %d: traffic to rank %d now on %s (was %s), at %.3f s after iteration %" PRIu64
                "\n",
                comm_.rank(), peer, transport_name(name), transport_name(was), t, iteration);
    rec->changes.push_back({t, iteration, peer, was, name});
    was = name;
  }
}

Status Runner::finish(const Work& work, const char* what, uint64_t iteration,
                      Clock::time_point began, RunRecord* rec) {
  Status st = work.wait(op_limit_);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - began).count();
  if (st.code() == HCOMM_ERR_TIMEOUT && !work.test()) {
    const char* why = o_.max_op_ms ? "--max-op-ms" : "the operation timeout, HCOMM_TIMEOUT_MS";
    std::printf("rank %d: iteration %" PRIu64
                ": the %s did not complete within %.0f ms (%s): "
                "a hang; aborting the communicator\n",
                comm_.rank(), iteration, what, ms, why);
    comm_.abort("hcomm-chaos: an operation hung on rank " + std::to_string(comm_.rank()));
    const Status after = work.wait(kAfterAbort);
    char msg[160];
    std::snprintf(msg, sizeof msg,
                  "the %s of iteration %" PRIu64 " did not complete within %.0f ms", what,
                  iteration, ms);
    rec->ending = Ending::hung;
    rec->error = Status(HCOMM_ERR_TIMEOUT, std::string(msg) + " (" + why + "); after the abort: " +
                                               (work.test() ? after.to_string() : "still running"));
    rec->error_iteration = iteration;
    rec->error_at_s = since_start(Clock::now());
    return rec->error;
  }
  if (ms > rec->max_op_ms) {
    rec->max_op_ms = ms;
    rec->max_op_iteration = iteration;
  }
  return st;
}

Status Runner::vote(uint64_t iteration, bool* stop, uint64_t* next_vote, RunRecord* rec) {
  const auto now = Clock::now();
  const double elapsed = since_start(now);
  vote_send_[0] = elapsed >= o_.seconds ? 1 : 0;
  vote_send_[1] = 0;
  if (comm_.rank() == 0) {
    const double per_iteration = iteration == 0 ? kVoteEverySeconds : elapsed / iteration;
    vote_send_[1] = static_cast<int32_t>(
        std::clamp(kVoteEverySeconds / std::max(per_iteration, 1e-9), 1.0, 10000.0));
  }
  Work work = comm_.allreduce_async(vote_send_, vote_recv_, 2, DataType::int32, ReduceOp::max);
  Status st = finish(work, "stop vote (allreduce)", iteration, now, rec);
  if (!st.ok()) return st;
  *stop = vote_recv_[0] != 0;
  *next_vote = iteration + static_cast<uint64_t>(std::max(vote_recv_[1], 1));
  return st;
}

void Runner::end_with(const Status& st, uint64_t iteration, Clock::time_point when,
                      RunRecord* rec) const {
  if (rec->ending == Ending::hung) return;  // finish() has recorded it
  rec->ending = st.code() == HCOMM_ERR_PEER_LOST ? Ending::peer_lost : Ending::failed;
  rec->error = st;
  rec->error_iteration = iteration;
  rec->error_at_s = since_start(when);
}

RunRecord Runner::run() {
  RunRecord rec;
  rec.transports_start = transports();
  std::printf("rank %d: traffic at start: %s\n", comm_.rank(),
              transports_text(rec.transports_start).c_str());
  std::map<int, std::string> current = rec.transports_start;
  Fnv1a64 digest;
  uint64_t next_vote = 0;
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(o_.interval_ms));
  for (uint64_t it = 0;; ++it) {
    if (o_.iters != 0) {
      if (it >= o_.iters) break;
    } else if (it == next_vote) {
      bool stop = false;
      const Status st = vote(it, &stop, &next_vote, &rec);
      if (!st.ok()) {
        end_with(st, it, Clock::now(), &rec);
        break;
      }
      if (stop) break;
    }
    // A pause after each iteration rather than a rate: the ranks leave a collective about
    // together, so they stay in step (a rate per rank would time their skew as operation time).
    if (it > 0 && interval.count() > 0) std::this_thread::sleep_for(interval);
    w_.prepare(it);
    const auto t0 = Clock::now();
    const Work work = w_.start(comm_);
    const Status st = finish(work, w_.op().c_str(), it, t0, &rec);
    const auto t1 = Clock::now();
    if (!st.ok()) {
      end_with(st, it, t1, &rec);
      break;
    }
    rec.iterations.push_back({since_start(t0), since_start(t1)});
    digest.add(w_.result(), w_.result_bytes());
    // --check-every: the element-by-element comparison of every Nth result (the digest has
    // every one).
    if (it % o_.check_every != 0) {
      watch_transports(it, &current, &rec);
      continue;
    }
    if (w_.checks_elements()) ++rec.checked;
    if (auto bad = w_.verify(it)) {
      ++rec.wrong_iterations;
      if (rec.mismatches.size() < kMismatchesKept) {
        rec.mismatches.push_back(*bad);
        std::printf("rank %d: iteration %" PRIu64
                    ": WRONG RESULT: %zu of %zu elements, the first "
                    "at index %zu: got %.9g%s, want %.9g\n",
                    comm_.rank(), it, bad->wrong, w_.result_bytes() / sizeof(float), bad->index,
                    static_cast<double>(bad->got), std::isnan(bad->got) ? " (never written)" : "",
                    static_cast<double>(bad->want));
      }
    }
    watch_transports(it, &current, &rec);
  }
  rec.duration_s = since_start(Clock::now());
  rec.digest = digest.value();
  if (rec.ending == Ending::failed) {
    std::printf("rank %d: iteration %" PRIu64 ": the %s failed at %.3f s: %s\n", comm_.rank(),
                rec.error_iteration, w_.op().c_str(), rec.error_at_s,
                rec.error.to_string().c_str());
    // The others may be waiting in this collective: make theirs fail too rather than wait.
    comm_.abort("hcomm-chaos: an operation failed on rank " + std::to_string(comm_.rank()));
  }
  rec.transports_end = transports();
  return rec;
}

}  // namespace hcomm::tools::chaos
