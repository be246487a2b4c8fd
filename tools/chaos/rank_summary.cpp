#include "chaos/rank_summary.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

namespace hcomm::tools::chaos {
namespace {

constexpr size_t kFixedFields = 14 + kEventKinds;
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// The buffers of the gathering: kept alive (leaked) if an operation on them is still in flight
// after the communicator was aborted, since the library may still write them.
struct GatherBuffers {
  std::vector<double> mine, all;
  int64_t my_length = 0;
  std::vector<int64_t> lengths;
  std::vector<uint8_t> text, texts;
};

}  // namespace

RankSummary RankSummary::of(int rank, const RunRecord& rec, const FailoverStats& stats,
                            const Analysis& a) {
  RankSummary s;
  s.rank = rank;
  s.iterations = rec.iterations.size();
  s.checked = rec.checked;
  s.wrong_iterations = rec.wrong_iterations;
  s.failovers = stats.failovers;
  s.failbacks = stats.failbacks;
  s.reconnects = stats.reconnects;
  s.peers_lost = stats.peers_lost;
  for (const LinkEvent& e : stats.events) {
    const auto kind = static_cast<size_t>(e.kind);
    if (kind < kEventKinds) ++s.events[kind];
  }
  s.digest = rec.digest;
  s.max_op_ms = rec.max_op_ms;
  s.duration_s = rec.duration_s;
  s.ending = rec.ending;
  for (const FaultFigures& f : a.faults) {
    s.detection_ms.push_back(f.detection ? f.detection->after_ms : kNone);
    s.recovery_ms.push_back(f.recovery_ms.value_or(kNone));
  }
  return s;
}

size_t RankSummary::encoded_size(size_t faults) {
  return kFixedFields + 2 * faults;
}

std::vector<double> RankSummary::encode() const {
  std::vector<double> d = {static_cast<double>(rank),
                           static_cast<double>(iterations),
                           static_cast<double>(checked),
                           static_cast<double>(wrong_iterations),
                           static_cast<double>(failovers),
                           static_cast<double>(failbacks),
                           static_cast<double>(reconnects),
                           static_cast<double>(peers_lost),
                           static_cast<double>(digest >> 32),
                           static_cast<double>(digest & 0xffffffffu),
                           max_op_ms,
                           duration_s,
                           static_cast<double>(static_cast<int>(ending)),
                           0 /* reserved */};
  for (uint64_t n : events) d.push_back(static_cast<double>(n));
  d.insert(d.end(), detection_ms.begin(), detection_ms.end());
  d.insert(d.end(), recovery_ms.begin(), recovery_ms.end());
  return d;
}

RankSummary RankSummary::decode(const double* d, size_t faults) {
  auto u = [&](size_t i) { return static_cast<uint64_t>(d[i]); };
  RankSummary s;
  s.rank = static_cast<int>(d[0]);
  s.iterations = u(1);
  s.checked = u(2);
  s.wrong_iterations = u(3);
  s.failovers = u(4);
  s.failbacks = u(5);
  s.reconnects = u(6);
  s.peers_lost = u(7);
  s.digest = (u(8) << 32) | u(9);
  s.max_op_ms = d[10];
  s.duration_s = d[11];
  s.ending = static_cast<Ending>(static_cast<int>(d[12]));
  for (size_t k = 0; k < kEventKinds; ++k) s.events[k] = u(14 + k);
  s.detection_ms.assign(d + kFixedFields, d + kFixedFields + faults);
  s.recovery_ms.assign(d + kFixedFields + faults, d + kFixedFields + 2 * faults);
  return s;
}

std::optional<Gathered> gather_all(Communicator& comm, const RankSummary& mine,
                                   const std::string& my_json, bool with_json, size_t faults,
                                   std::chrono::milliseconds limit) {
  const size_t n = static_cast<size_t>(comm.size());
  auto buffers = std::make_unique<GatherBuffers>();
  GatherBuffers& b = *buffers;
  // Waits for one allgather; on a hang the buffers are leaked on purpose (see GatherBuffers).
  auto wait = [&](const Work& work, const char* what) {
    Status st = work.wait(limit);
    if (st.ok()) return true;
    if (!work.test()) {
      comm.abort("hcomm-chaos: gathering the figures hung");
      if (!work.wait(std::chrono::seconds(10)).ok() && !work.test()) buffers.release();
    }
    std::printf("rank %d: could not gather every rank's figures (%s): %s\n", comm.rank(), what,
                st.to_string().c_str());
    return false;
  };

  const size_t width = RankSummary::encoded_size(faults);
  b.mine = mine.encode();
  b.all.resize(width * n);
  if (!wait(comm.allgather_async(b.mine.data(), b.all.data(), width, DataType::float64),
            "summaries"))
    return std::nullopt;
  Gathered g;
  for (size_t r = 0; r < n; ++r)
    g.summaries.push_back(RankSummary::decode(&b.all[r * width], faults));
  if (!with_json) return g;

  b.my_length = static_cast<int64_t>(my_json.size());
  b.lengths.resize(n);
  if (!wait(comm.allgather_async(&b.my_length, b.lengths.data(), 1, DataType::int64),
            "JSON lengths"))
    return std::nullopt;
  std::vector<size_t> counts(n), displs(n);
  size_t total = 0;
  for (size_t r = 0; r < n; ++r) {
    counts[r] = static_cast<size_t>(b.lengths[r]);
    displs[r] = total;
    total += counts[r];
  }
  b.text.assign(my_json.begin(), my_json.end());
  b.texts.resize(std::max<size_t>(total, 1));
  if (!wait(comm.allgatherv_async(b.text.data(), b.texts.data(), counts, displs, DataType::uint8),
            "JSON"))
    return std::nullopt;
  for (size_t r = 0; r < n; ++r)
    g.json.emplace_back(reinterpret_cast<const char*>(b.texts.data()) + displs[r], counts[r]);
  return g;
}

}  // namespace hcomm::tools::chaos
