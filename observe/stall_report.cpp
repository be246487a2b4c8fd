#include "observe/stall_report.hpp"

#include <cstdio>

#include "core/parse.hpp"

namespace hcomm::observe {

namespace {

std::string seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace

std::string op_name(const OpRecord& op) {
  const char* kind = collectives::op_kind_name(op.kind);
  if (!collectives::is_collective(op.kind))
    return std::string(kind) +
           (op.kind == collectives::OpKind::send ? " to rank " : " from rank ") +
           std::to_string(op.peer) + " (tag " + std::to_string(op.tag) + ")";
  return std::string(kind) + " #" + std::to_string(op.seq);
}

std::vector<int> stalled_on(const OpRecord& op, const StallFacts& facts) {
  if (!collectives::is_collective(op.kind)) return {op.peer};
  std::vector<int> out;
  for (size_t r = 0; r < facts.progress.size(); ++r) {
    if (static_cast<int>(r) == facts.rank) continue;
    const auto& p = facts.progress[r];
    if (!p || p->seq < op.seq) out.push_back(static_cast<int>(r));
  }
  return out;
}

std::string stall_line(const OpRecord& op, const StallFacts& facts) {
  std::string line = op_name(op) + " (" + core::format_bytes(op.bytes) + " " +
                     dtype_name(op.dtype) + ") waiting " + seconds(facts.now_ns - op.enqueued_ns);
  if (facts.progress.empty() && collectives::is_collective(op.kind))
    return line + " (which rank it waits for is unknown: " + facts.progress_error + ")";
  const std::vector<int> ranks = stalled_on(op, facts);
  if (ranks.empty()) return line + ": every rank has entered it; data from a peer is late";
  line += ranks.size() == 1 ? " for rank " : " for ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) line += (i ? ", " : "") + std::to_string(ranks[i]);
  std::string about;
  const size_t shown = std::min<size_t>(ranks.size(), 4);
  for (size_t i = 0; i < shown; ++i) {
    const int r = ranks[i];
    const auto idx = static_cast<size_t>(r);
    const std::optional<Progress>* p = idx < facts.progress.size() ? &facts.progress[idx] : nullptr;
    const std::string via = idx < facts.transport_to.size() ? facts.transport_to[idx] : "?";
    if (!about.empty()) about += "; ";
    if (ranks.size() > 1) about += "rank " + std::to_string(r) + ": ";
    if (p == nullptr || !p->has_value()) {
      about += "nothing heard from it on " + via + (facts.progress.empty() ? "" : " yet");
      continue;
    }
    const Progress& pr = **p;
    about += "last heard " + seconds(facts.now_ns + facts.offset_ns - pr.entered_ns) + " ago on " +
             via + "; its last operation: " + collectives::op_kind_name(pr.kind) + " #" +
             std::to_string(pr.seq) + ", " + op_state_name(pr.state) + ", pid " +
             std::to_string(pr.pid) + " on " + pr.host;
  }
  if (ranks.size() > shown) about += "; ...";
  return line + " (" + about + ")";
}

}  // namespace hcomm::observe
