// The table keeps nccl-tests' columns and footer, plus the algorithm; the JSON carries the same
// rows, each with the run's parameters.
#include "bench/report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <string>

#include "core/json_writer.hpp"

namespace hcomm::tools::bench {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Progress::Progress(bool enabled, size_t total) : enabled_(enabled && isatty(2)), total_(total) {}

// Shown only once the run has taken ~2 s: short runs stay quiet.
void Progress::update(size_t done) {
  if (!enabled_ || Clock::now() - start_ < std::chrono::seconds(2)) return;
  constexpr size_t kWidth = 30;
  const size_t filled = total_ == 0 ? kWidth : done * kWidth / total_;
  std::fprintf(stderr, "\r[%s%s] %zu/%zu sizes", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, ' ').c_str(), done, total_);
  std::fflush(stderr);
  shown_ = true;
}

void Progress::erase() {
  if (shown_) std::fputs("\r\033[K", stderr);
  shown_ = false;
}

Report::Report(const Options& o, const OpSpec& spec, int world_size)
    : o_(o), spec_(spec), n_(world_size) {}

const char* Report::redop_name() const {
  return spec_.reduces ? hcomm::reduce_op_name(o_.redop) : "none";
}

int Report::root() const {
  return spec_.rooted ? o_.root : -1;
}

void Report::header() const {
  std::printf("# hcomm-bench %s: world_size %d, dtype %s, redop %s, root %d, algo %s\n", spec_.name,
              n_, hcomm::dtype_name(o_.dtype), redop_name(), root(),
              o_.algo.empty() ? "(library's choice)" : o_.algo.c_str());
  if (o_.step_bytes != 0)
    std::printf("#  minBytes %zu maxBytes %zu step: %zu(bytes)", o_.min_bytes, o_.max_bytes,
                o_.step_bytes);
  else
    std::printf("#  minBytes %zu maxBytes %zu step: %zu(factor)", o_.min_bytes, o_.max_bytes,
                o_.step_factor);
  std::printf(" warmup iters: %d iters: %d validation: %d\n", o_.warmup, o_.iters,
              o_.check ? 1 : 0);
  if (o_.has_compression) std::printf("# compression: %s\n", hcomm::to_string(o_.compression));
  std::printf("#\n# %10s  %12s  %8s  %6s  %6s  %8s  %9s  %7s  %7s  %6s  %12s%s\n", "size", "count",
              "type", "redop", "root", "algo", "time", "algbw", "busbw", "#wrong", "xhost",
              o_.has_compression ? "    wire%" : "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %8s  %9s  %7s  %7s  %6s  %12s%s\n", "(B)", "(elements)",
              "", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(B/op)",
              o_.has_compression ? "   (rank 0)" : "");
  std::fflush(stdout);
}

void Report::row(const Row& r) {
  rows_.push_back(r);
  const std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
  const std::string xhost = r.cross_host_bytes < 0 ? "-" : std::to_string(r.cross_host_bytes);
  char wire[32] = "";
  if (o_.has_compression) {
    if (r.wire_ratio < 0)
      std::snprintf(wire, sizeof wire, "  %9s", "-");
    else
      std::snprintf(wire, sizeof wire, "  %9.2f", 100.0 * r.wire_ratio);
  }
  std::printf("  %10zu  %12zu  %8s  %6s  %6d  %8s  %9.2f  %7.2f  %7.2f  %6s  %12s%s\n", r.bytes,
              r.count, hcomm::dtype_name(o_.dtype), redop_name(), root(),
              r.algo.empty() ? "-" : r.algo.c_str(), r.time_us, r.algbw, r.busbw, wrong.c_str(),
              xhost.c_str(), wire);
  std::fflush(stdout);
}

void Report::qos(const QosClass& q, double link_gbps) {
  has_qos_ = true;
  qos_ = q;
  link_gbps_ = link_gbps;
  char link[32] = "estimated";
  if (link_gbps > 0) std::snprintf(link, sizeof link, "%g", link_gbps);
  std::printf("# qos: %s link %s Gbit/s\n", q.to_string().c_str(), link);
  std::fflush(stdout);
}

void Report::timed(size_t bytes, size_t count, const std::vector<TimedRun>& ranks, int64_t wrong) {
  timed_ = true;
  timed_bytes_ = bytes;
  timed_count_ = count;
  timed_ranks_ = ranks;
  timed_wrong_ = wrong;
  std::printf("# hcomm-bench %s: world_size %d, dtype %s, redop %s, root %d, algo %s\n", spec_.name,
              n_, hcomm::dtype_name(o_.dtype), redop_name(), root(),
              o_.algo.empty() ? "(library's choice)" : o_.algo.c_str());
  std::printf(
      "# tenant mode: %zu B (%zu elements) back to back for %g s, warmup iters: %d "
      "validation: %d\n#\n",
      bytes, count, o_.duration_s, o_.warmup, o_.check ? 1 : 0);
  std::printf("# %5s  %10s  %9s  %9s  %9s  %12s  %12s  %12s\n", "rank", "iters", "elapsed", "wire",
              "wire", "median", "p99", "mean");
  std::printf("# %5s  %10s  %9s  %9s  %9s  %12s  %12s  %12s\n", "", "", "(s)", "(MB)", "(Gbit/s)",
              "(us)", "(us)", "(us)");
  double total_gbps = 0;
  bool across = false;
  for (const TimedRun& t : ranks) {
    const bool has_wire = t.wire_bytes >= 0;
    across = across || has_wire;
    total_gbps += t.wire_gbps;
    char mb[32] = "-", gbps[32] = "-";
    if (has_wire) {
      std::snprintf(mb, sizeof mb, "%.1f", static_cast<double>(t.wire_bytes) / 1e6);
      std::snprintf(gbps, sizeof gbps, "%.4f", t.wire_gbps);
    }
    std::printf("  %5d  %10" PRId64 "  %9.3f  %9s  %9s  %12.2f  %12.2f  %12.2f\n", t.rank,
                t.iterations, t.elapsed_s, mb, gbps, t.median_us, t.p99_us, t.mean_us);
  }
  const std::string w = wrong < 0 ? "N/A" : std::to_string(wrong);
  std::printf("# Out of bounds values : %s %s\n", w.c_str(), wrong > 0 ? "FAILED" : "OK");
  if (across)
    std::printf("# Wire total (all ranks, to other hosts): %.4f Gbit/s\n", total_gbps);
  else
    std::printf("# Wire: every rank on one host (nothing sent to other hosts)\n");
  std::printf("#\n");
  std::fflush(stdout);
}

int64_t Report::total_wrong() const {
  int64_t total = std::max<int64_t>(timed_wrong_, 0);
  for (const Row& r : rows_) total += std::max<int64_t>(r.wrong, 0);
  return total;
}

void Report::footer() const {
  double sum = 0;
  for (const Row& r : rows_) sum += r.busbw;
  std::printf("# Out of bounds values : %" PRId64 " %s\n", total_wrong(),
              total_wrong() == 0 ? "OK" : "FAILED");
  double largest = -1, bound = -1;
  for (const Row& r : rows_)
    if (r.max_error > largest) largest = r.max_error, bound = r.error_bound;
  if (largest >= 0)
    std::printf("# Largest error        : %.3g (bound %.3g, README \"Compression\")\n", largest,
                bound);
  std::printf("# Avg bus bandwidth    : %g\n#\n", rows_.empty() ? 0.0 : sum / rows_.size());
  std::fflush(stdout);
}

bool Report::write_json(FILE* f) const {
  const std::string common = "\"op\":" + core::JsonWriter::quote(spec_.name) +
                             ",\"dtype\":" + core::JsonWriter::quote(hcomm::dtype_name(o_.dtype)) +
                             ",\"redop\":" + core::JsonWriter::quote(redop_name()) +
                             ",\"root\":" + std::to_string(root());
  if (timed_) return write_json_timed(f, common);
  std::fprintf(f,
               "{\"tool\":\"hcomm-bench\",%s,\"world_size\":%d,\"iters\":%d,\"warmup\":%d,"
               "\"check\":%s,\"results\":[",
               common.c_str(), n_, o_.iters, o_.warmup, o_.check ? "true" : "false");
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    const std::string wrong = r.wrong < 0 ? "null" : std::to_string(r.wrong);
    std::fprintf(f,
                 "%s\n {%s,\"bytes\":%zu,\"count\":%zu,\"algo\":%s,\"time_us\":%.9g,"
                 "\"algbw\":%.9g,\"busbw\":%.9g,\"wrong\":%s,\"cross_host_bytes\":%s,"
                 "\"compression\":%s,\"wire_ratio\":%s,\"max_error\":%s}",
                 i == 0 ? "" : ",", common.c_str(), r.bytes, r.count,
                 core::JsonWriter::quote(r.algo).c_str(), r.time_us, r.algbw, r.busbw,
                 wrong.c_str(),
                 r.cross_host_bytes < 0 ? "null" : std::to_string(r.cross_host_bytes).c_str(),
                 core::JsonWriter::quote(
                     hcomm::to_string(o_.has_compression ? o_.compression : Compression::none))
                     .c_str(),
                 r.wire_ratio < 0 ? "null" : std::to_string(r.wire_ratio).c_str(),
                 r.max_error < 0 ? "null" : std::to_string(r.max_error).c_str());
  }
  std::fprintf(f, "]}\n");
  return std::ferror(f) == 0;
}

bool Report::write_json_timed(FILE* f, const std::string& common) const {
  std::fprintf(f,
               "{\"tool\":\"hcomm-bench\",\"mode\":\"duration\",%s,\"world_size\":%d,"
               "\"warmup\":%d,\"check\":%s,\"bytes\":%zu,\"count\":%zu,\"duration_s\":%.9g,"
               "\"wrong\":%s,",
               common.c_str(), n_, o_.warmup, o_.check ? "true" : "false", timed_bytes_,
               timed_count_, o_.duration_s,
               timed_wrong_ < 0 ? "null" : std::to_string(timed_wrong_).c_str());
  if (has_qos_)
    std::fprintf(f,
                 "\"qos\":{\"min\":%d,\"max\":%d,\"priority\":%d,\"spec\":%s},"
                 "\"link_gbps\":%.9g,",
                 qos_.min_rate, qos_.max_rate, qos_.priority,
                 core::JsonWriter::quote(qos_.to_string()).c_str(), link_gbps_);
  std::fprintf(f, "\"ranks\":[");
  for (size_t i = 0; i < timed_ranks_.size(); ++i) {
    const TimedRun& t = timed_ranks_[i];
    // Unix times with %.6f: %.9g would round them to whole seconds.
    std::fprintf(f,
                 "%s\n {\"rank\":%d,\"iterations\":%" PRId64
                 ",\"elapsed_s\":%.9g,\"wire_bytes\":%s,\"wire_gbps\":%.9g,"
                 "\"median_us\":%.9g,\"p99_us\":%.9g,\"mean_us\":%.9g,\"start_unix\":%.6f,"
                 "\"end_unix\":%.6f,\"samples\":[",
                 i == 0 ? "" : ",", t.rank, t.iterations, t.elapsed_s,
                 t.wire_bytes < 0 ? "null" : std::to_string(t.wire_bytes).c_str(), t.wire_gbps,
                 t.median_us, t.p99_us, t.mean_us, t.start_unix, t.end_unix);
    for (size_t k = 0; k < t.samples.size(); ++k)
      std::fprintf(f, "%s[%.6f,%" PRId64 "]", k == 0 ? "" : ",", t.samples[k].first,
                   t.samples[k].second);
    std::fprintf(f, "]}");
  }
  std::fprintf(f, "]}\n");
  return std::ferror(f) == 0;
}

}  // namespace hcomm::tools::bench
