// hcomm-perf-mon (also installed as hcomm_perf_mon): the live counters of every hcomm process on
// this host, without stopping them. Each process publishes its communicators' counters in
// /dev/shm/hcomm-stats.<pid> (observe/stats_segment.hpp); this program maps them read-only,
// samples them every interval and prints per rank: operations/s, the operations' GB/s, GB/s sent
// per transport, operations in flight, the oldest one's age, failover state and QoS class.
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "collectives/operation.hpp"
#include "core/json_writer.hpp"
#include "core/parse.hpp"
#include "observe/stats_segment.hpp"
#include "usage.hpp"

const hcomm::tools::Program hcomm::tools::kProgram{"hcomm-perf-mon", /*runs_as_rank=*/false};

namespace {

using hcomm::observe::StatsComm;
using hcomm::observe::StatsView;
using Clock = std::chrono::steady_clock;

constexpr char kUsage[] =
    "usage: hcomm-perf-mon [--interval 100ms] [--output comm.log] [--json] [--once] [--pid PID]\n"
    "  Attaches to the hcomm processes running on this host (their /dev/shm/hcomm-stats.<pid>)\n"
    "  and prints, every interval, one line per rank of each communicator: operations/s, the\n"
    "  operations' GB/s (bytes every rank agrees on, as hcomm-bench's algbw), GB/s sent per\n"
    "  transport, operations in flight, the oldest one's age, failover state, QoS class.\n"
    "  --interval D   sampling interval: 100ms, 1s, ... (default 100ms; at least 10ms)\n"
    "  --output FILE  also append the lines to FILE\n"
    "  --json         one JSON object per line instead of text\n"
    "  --once         one interval, then exit\n"
    "  --pid PID      only this process\n"
    "  Exits 0; 1 when no hcomm process was found during the first interval.\n";

struct Options {
  std::chrono::nanoseconds interval = std::chrono::milliseconds(100);
  std::string output;
  bool json = false;
  bool once = false;
  int pid = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) hcomm::tools::usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      hcomm::tools::print_help(kUsage);
    } else if (a == "--interval" || a == "-i") {
      const std::string v = next();
      auto d = hcomm::core::parse_duration(v, std::chrono::milliseconds(1));
      if (!d || *d < std::chrono::milliseconds(10))
        hcomm::tools::usage_error("--interval '" + v + "': expected a duration of at least 10ms");
      o.interval = *d;
    } else if (a == "--output" || a == "-o") {
      o.output = next();
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--once") {
      o.once = true;
    } else if (a == "--pid") {
      const std::string v = next();
      auto p = hcomm::core::parse_integer(v);
      if (!p || *p <= 0) hcomm::tools::usage_error("--pid '" + v + "': expected a process id");
      o.pid = static_cast<int>(*p);
    } else {
      hcomm::tools::usage_error("unknown argument '" + a + "'");
    }
  }
  return o;
}

/// One communicator slot's counters at one moment.
struct Sample {
  uint64_t ops = 0, bytes = 0, retransmits = 0;
  std::vector<std::pair<std::string, uint64_t>> sent;
};

Sample read(const StatsComm& c) {
  Sample s;
  s.ops = c.ops.load(std::memory_order_relaxed);
  s.bytes = c.bytes.load(std::memory_order_relaxed);
  s.retransmits = c.retransmits.load(std::memory_order_relaxed);
  const uint32_t n = std::min<uint32_t>(c.num_transports, hcomm::observe::kStatsTransports);
  for (uint32_t i = 0; i < n; ++i)
    s.sent.emplace_back(std::string(c.transports[i].name, strnlen(c.transports[i].name, 16)),
                        c.transports[i].bytes_sent.load(std::memory_order_relaxed));
  return s;
}

using Key = std::pair<int, int>;  // pid, slot

std::map<Key, Sample> sample_all(const std::vector<std::unique_ptr<StatsView>>& views) {
  std::map<Key, Sample> out;
  for (const auto& v : views)
    for (size_t i = 0; i < hcomm::observe::kStatsComms; ++i) {
      const StatsComm& c = v->segment().comms[i];
      if (c.state.load(std::memory_order_acquire) == StatsComm::kLive)
        out[{v->pid(), static_cast<int>(i)}] = read(c);
    }
  return out;
}

std::string wall_clock() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&t, &tm);
  const int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

std::string line_for(const StatsComm& c, int pid, const Sample& a, const Sample& b, double secs,
                     bool json, const std::string& when) {
  const double ops = static_cast<double>(b.ops - a.ops) / secs;
  const double gbs = static_cast<double>(b.bytes - a.bytes) / secs / 1e9;
  const uint64_t in_flight = c.in_flight.load(std::memory_order_relaxed);
  const double oldest_ms =
      static_cast<double>(c.oldest_age_us.load(std::memory_order_relaxed)) / 1e3;
  const auto kind = static_cast<hcomm::collectives::OpKind>(c.oldest_kind.load());
  const char* oldest_kind =
      in_flight > 0 && c.oldest_kind.load() > 0 ? hcomm::collectives::op_kind_name(kind) : "";
  const uint32_t fallback = c.peers_on_fallback.load(), lost = c.peers_lost.load();
  const uint64_t gray = c.gray_failures.load(), rtt_us = c.link_rtt_us.load();
  const double resent = static_cast<double>(b.retransmits - a.retransmits) / secs;
  const uint32_t qmin = c.qos_min.load(), qmax = c.qos_max.load(), qprio = c.qos_priority.load();
  const std::string id(c.id, strnlen(c.id, sizeof c.id));
  std::vector<std::pair<std::string, double>> wire;
  for (size_t i = 0; i < b.sent.size(); ++i) {
    const uint64_t before = i < a.sent.size() ? a.sent[i].second : 0;
    wire.emplace_back(b.sent[i].first, static_cast<double>(b.sent[i].second - before) / secs / 1e9);
  }
  if (json) {
    hcomm::core::JsonWriter j;
    j.begin_object().field("time", when).field("pid", pid).field("communicator", id);
    j.field("rank", c.rank).field("size", c.size).field("ops_per_s", ops).field("op_gbps", gbs);
    j.key("sent_gbps").begin_object();
    for (const auto& [name, v] : wire) j.field(name, v);
    j.end_object().field("in_flight", in_flight).field("oldest_ms", oldest_ms);
    j.field("oldest_op", oldest_kind).field("oldest_seq", c.oldest_seq.load());
    j.field("peers_on_fallback", static_cast<int>(fallback))
        .field("peers_lost", static_cast<int>(lost));
    j.field("failovers", c.failovers.load()).field("failbacks", c.failbacks.load());
    j.field("gray_failures", gray).field("link_rtt_us", rtt_us);
    j.field("retransmits_per_s", resent);
    j.key("qos")
        .begin_object()
        .field("min", static_cast<int>(qmin))
        .field("max", static_cast<int>(qmax));
    j.field("priority", static_cast<int>(qprio));
    j.end_object().end_object();
    return j.str();
  }
  std::string wire_text;
  for (const auto& [name, v] : wire) {
    char part[64];
    std::snprintf(part, sizeof part, " %s %.2f", name.c_str(), v);
    wire_text += part;
  }
  char oldest[64] = "-";
  if (in_flight > 0)
    std::snprintf(oldest, sizeof oldest, "%s #%" PRIu64 " %.1f ms", oldest_kind,
                  c.oldest_seq.load(), oldest_ms);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s pid %d comm %.8s rank %d/%d: %.0f ops/s, %.3f GB/s; sent GB/s:%s; in flight "
                "%" PRIu64 ", oldest %s; failover: %u on fallback, %u lost, %" PRIu64
                " gray; links: rtt %" PRIu64 " us, %.0f resent/s; qos min=%u max=%u priority=%u",
                when.c_str(), pid, id.c_str(), c.rank, c.size, ops, gbs,
                wire_text.empty() ? " -" : wire_text.c_str(), in_flight, oldest, fallback, lost,
                gray, rtt_us, resent, qmin, qmax, qprio);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::FILE* out = nullptr;
  if (!o.output.empty()) {
    out = std::fopen(o.output.c_str(), "a");
    if (out == nullptr) {
      std::fprintf(stderr, "hcomm-perf-mon: cannot open %s: %s\n", o.output.c_str(),
                   std::strerror(errno));
      return 2;
    }
  }
  bool seen_any = false;
  auto views = StatsView::attach_all();
  auto before = sample_all(views);
  auto t0 = Clock::now();
  auto attached = t0;
  for (int round = 0;; ++round) {
    std::this_thread::sleep_until(t0 + o.interval);
    const auto t1 = Clock::now();
    const auto after = sample_all(views);
    const double secs = std::chrono::duration<double>(t1 - t0).count();
    const std::string when = wall_clock();
    for (const auto& v : views) {
      if (o.pid != 0 && v->pid() != o.pid) continue;
      for (size_t i = 0; i < hcomm::observe::kStatsComms; ++i) {
        const Key k{v->pid(), static_cast<int>(i)};
        const auto a = before.find(k);
        const auto b = after.find(k);
        if (a == before.end() || b == after.end()) continue;
        seen_any = true;
        const std::string line =
            line_for(v->segment().comms[i], v->pid(), a->second, b->second, secs, o.json, when);
        std::printf("%s\n", line.c_str());
        if (out != nullptr) std::fprintf(out, "%s\n", line.c_str());
      }
    }
    std::fflush(stdout);
    if (out != nullptr) std::fflush(out);
    if (round == 0 && !seen_any) {
      std::fprintf(stderr,
                   "hcomm-perf-mon: no hcomm process with live counters on this host "
                   "(HCOMM_STATS=0, or none running)\n");
      return 1;
    }
    if (o.once) return 0;
    // Processes that started since are picked up once a second.
    if (t1 - attached >= std::chrono::seconds(1)) {
      views = StatsView::attach_all();
      attached = t1;
      before = sample_all(views);
    } else {
      before = after;
    }
    t0 = t1;
  }
}
