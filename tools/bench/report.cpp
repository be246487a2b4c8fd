// The table keeps nccl-tests' columns and footer, plus the algorithm; the JSON carries the same
// rows, each with the run's parameters.
#include "bench/report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <string>

namespace hcomm::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", ch);
      out += esc;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

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
  std::printf(" warmup iters: %d iters: %d validation: %d\n#\n", o_.warmup, o_.iters,
              o_.check ? 1 : 0);
  std::printf("# %10s  %12s  %8s  %6s  %6s  %8s  %9s  %7s  %7s  %6s  %12s\n", "size", "count",
              "type", "redop", "root", "algo", "time", "algbw", "busbw", "#wrong", "xhost");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %8s  %9s  %7s  %7s  %6s  %12s\n", "(B)", "(elements)",
              "", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(B/op)");
  std::fflush(stdout);
}

void Report::row(const Row& r) {
  rows_.push_back(r);
  const std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
  const std::string xhost = r.cross_host_bytes < 0 ? "-" : std::to_string(r.cross_host_bytes);
  std::printf("  %10zu  %12zu  %8s  %6s  %6d  %8s  %9.2f  %7.2f  %7.2f  %6s  %12s\n", r.bytes,
              r.count, hcomm::dtype_name(o_.dtype), redop_name(), root(),
              r.algo.empty() ? "-" : r.algo.c_str(), r.time_us, r.algbw, r.busbw, wrong.c_str(),
              xhost.c_str());
  std::fflush(stdout);
}

int64_t Report::total_wrong() const {
  int64_t total = 0;
  for (const Row& r : rows_) total += std::max<int64_t>(r.wrong, 0);
  return total;
}

void Report::footer() const {
  double sum = 0;
  for (const Row& r : rows_) sum += r.busbw;
  std::printf("# Out of bounds values : %" PRId64 " %s\n", total_wrong(),
              total_wrong() == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %g\n#\n", rows_.empty() ? 0.0 : sum / rows_.size());
  std::fflush(stdout);
}

bool Report::write_json(FILE* f) const {
  const std::string common = "\"op\":" + json_string(spec_.name) +
                             ",\"dtype\":" + json_string(hcomm::dtype_name(o_.dtype)) +
                             ",\"redop\":" + json_string(redop_name()) +
                             ",\"root\":" + std::to_string(root());
  std::fprintf(f,
               "{\"tool\":\"hcomm-bench\",%s,\"world_size\":%d,\"iters\":%d,\"warmup\":%d,"
               "\"check\":%s,\"results\":[",
               common.c_str(), n_, o_.iters, o_.warmup, o_.check ? "true" : "false");
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    const std::string wrong = r.wrong < 0 ? "null" : std::to_string(r.wrong);
    std::fprintf(f,
                 "%s\n {%s,\"bytes\":%zu,\"count\":%zu,\"algo\":%s,\"time_us\":%.9g,"
                 "\"algbw\":%.9g,\"busbw\":%.9g,\"wrong\":%s,\"cross_host_bytes\":%s}",
                 i == 0 ? "" : ",", common.c_str(), r.bytes, r.count, json_string(r.algo).c_str(),
                 r.time_us, r.algbw, r.busbw, wrong.c_str(),
                 r.cross_host_bytes < 0 ? "null" : std::to_string(r.cross_host_bytes).c_str());
  }
  std::fprintf(f, "]}\n");
  return std::ferror(f) == 0;
}

}  // namespace hcomm::bench
