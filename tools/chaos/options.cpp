// hcomm-chaos's command line: getopt_long parsing, checked strictly (a bad value is a usage
// error, never a guess), and the usage text with examples.
#include "chaos/options.hpp"

#include <getopt.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <hcomm/hcomm.hpp>

#include "algorithm_names.hpp"
#include "core/parse.hpp"

namespace hcomm::tools::chaos {
namespace {

// The usage text; the algorithms come from the library (algorithm_names.hpp).
const char kUsageHead[] =
    "usage: hcomm-chaos [OP] [options]   (under a launcher: hcomm-run -n N hcomm-chaos ...)\n"
    "Runs a collective in a loop while injecting faults on a schedule, verifies every result\n"
    "and reports failovers, detection and recovery times and throughput before, during and\n"
    "after the faults. Exit status 0 only when every result and every check is right.\n"
    "\n"
    "OP: allreduce (default, float32 sum), broadcast, allgather\n"
    "Workload:\n"
    "  -b, --bytes N          size of one operation (default 1M; 4096, 64K, 64KiB, 1M: x1024):\n"
    "                         the buffer; for allgather the gathered buffer, as in hcomm-bench\n"
    "  -n, --iters N          run N iterations (every rank does the same N)\n"
    "  -s, --seconds S        or run for S seconds (default 10; the ranks agree when to stop)\n"
    "  -i, --interval-ms MS   pause MS ms between iterations (default 0: back to back), so\n"
    "                         that --iters takes a predictable time\n"
    "  -d, --data MODE        exact (default): small integer-valued floats; every rank computes\n"
    "                         the exact result independently and compares it bit for bit.\n"
    "                         random: seeded pseudo-random floats; what no reduction order can\n"
    "                         change is compared element by element, and a digest of every\n"
    "                         result (FNV-1a 64) is printed for --expect-digest\n"
    "      --seed N           seed of the inputs (default 1)\n"
    "      --check-every N    compare every Nth result element by element (default 1: each);\n"
    "                         the digest covers every result, so that --expect-digest still\n"
    "                         checks them all: for loops that must spend their time in the\n"
    "                         operation (throughput under a fault)\n"
    "  -r, --root R           broadcast root (default 0)\n"
    "  -a, --algo A           force the algorithm (auto: the library's choice): two runs\n"
    "                         compared by digest must reduce in the same order. By operation:\n";
// (after the algorithms)
const char kUsageCompression[] =
    "      --compression C    payload codec (Config::compression): none (default), fp16, bf16,\n"
    "                         delta, zstd, auto. Under fp16/bf16 results are compared by\n"
    "                         digest only (--expect-digest of a fault-free run with the same\n"
    "                         codec); the lossless codecs keep every element check\n";
const char kUsageTail[] =
    "Times and durations are numbers in the unit the option names, or carry their own (us, ms,\n"
    "s, m): -s 90 and -s 1.5m, --max-op-ms 2000 and --max-op-ms 2s are the same.\n"
    "Faults (times in seconds from the start, a barrier right before the loop):\n"
    "  --fault 'at=S,do=ACTION[,for=S][,undo=CMD][,rank=R]'   (repeatable)\n"
    "        ACTION: cmd:SHELL-COMMAND  run by /bin/sh on rank R (default 0); with for=, undo=\n"
    "                                   CMD runs on the same rank that much later\n"
    "                loss:PERCENT@IFACE PERCENT (0.1 .. 100) of the packets in and out of IFACE\n"
    "                                   on rank R's host dropped at random (nftables numgen\n"
    "                                   random) for for= seconds: a sick link, not a dead one\n"
    "                rate:RATE@IFACE    what leaves IFACE on rank R's host held to RATE (tc\n"
    "                                   tbf: 100mbit, 1gbit, ...) for for= seconds\n"
    "                stop:T             SIGSTOP rank T, SIGCONT after for= (default 1 s)\n"
    "                kill:T             SIGKILL rank T\n"
    "        stop and kill are sent by rank R (default: the lowest rank other than T); all ranks\n"
    "        must share a host (their pids are gathered at the start). A command may contain\n"
    "        commas: only ',at=' ',do=' ',for=' ',undo=' ',rank=' separate fields.\n"
    "  --flap 'start=S,period=MS,count=K,down=CMD,up=CMD[,down_for=MS][,rank=R]'\n"
    "        (repeatable) K times: DOWN at start + k*period, UP down_for ms later (default\n"
    "        half a period); each down phase is a fault of its own in the report\n"
    "  A fault whose time the run does not reach, or whose command fails, fails the run; what a\n"
    "  run that ends early (an error) leaves undone (undo, SIGCONT) is done at its end.\n"
    "Checks (each failure is printed with the reason; every one also fails the exit status):\n"
    "  every result right; no operation failing, unless --expect-peer-lost allows\n"
    "  HCOMM_ERR_PEER_LOST to end the loop (and requires it);\n"
    "  --expect-digest HEX           the digest of all results (needs --iters)\n"
    "  --expect-peer-lost            each surviving rank must end with HCOMM_ERR_PEER_LOST and\n"
    "                                prints how long after the kill it came\n"
    "  --max-detect-ms MS            each fault detected (failover, link_down or peer_lost\n"
    "                                event) within MS of its time; also bounds the time to\n"
    "                                HCOMM_ERR_PEER_LOST. A stopped rank does not judge its stop\n"
    "  --max-op-ms MS                no operation may take longer (else the communicator is\n"
    "                                aborted: a hang); a stopped rank's own operation counts\n"
    "                                its stop\n"
    "  --expect-detection            every fault detected by some rank\n"
    "  --expect-failovers MIN        at least MIN failovers, all ranks together\n"
    "  --expect-failbacks MIN        at least MIN failbacks, all ranks together\n"
    "  --expect-event KIND           at least one event KIND (failover, failback, link_down,\n"
    "                                reconnect_attempt, reconnected, pinned, peer_lost)\n"
    "  --max-failovers MAX           at most MAX failovers on each rank\n"
    "  --max-switches MAX            at most MAX switches of traffic (failovers and\n"
    "                                failbacks) per fault, from its time to the next\n"
    "                                fault's, on each rank: no oscillation\n"
    "  --min-during-pct P            throughput during the faults at least P% of the\n"
    "                                reference's (needs --reference-s)\n"
    "  --expect-final-transport T    at the end, traffic to every live peer on T (tcp, rdma,\n"
    "                                shm, tcp-fallback, ...), on every rank\n"
    "  Checks over all ranks use every rank's figures, gathered at the end; when a rank was\n"
    "  killed they cannot be, and each rank judges its own.\n"
    "Output:\n"
    "  every rank: the transport to each peer at the start, at the end and when it changes,\n"
    "  failures, a summary line; rank 0: the schedule, events, per-fault detection (from the\n"
    "  fault's time to the first failover/link_down/peer_lost event after it) and recovery\n"
    "  (to the end of the first iteration completed after that event), throughput before,\n"
    "  during and after the faults (algbw = bytes / median iteration time; GB/s in ops =\n"
    "  bytes / the time spent in operations, stalls included; iterations/s), the switches\n"
    "  per fault\n"
    "  --reference-s S        first run the workload S seconds over the fallback's network\n"
    "                         alone (HCOMM_FALLBACK_IFNAME, or HCOMM_SOCKET_IFNAME's second\n"
    "                         interface: both links of every peer there) and show each\n"
    "                         window's GB/s in ops against it: what the fallback delivers\n"
    "                         when healthy\n"
    "  -J, --json FILE        rank 0 writes every rank's figures (its own only when they cannot\n"
    "                         be gathered); a FILE with %r: each rank writes its own\n"
    "  -h, --help             this text\n"
    "Environment: the library's (HCOMM_KEEPALIVE_MS, HCOMM_KEEPALIVE_TIMEOUT_MS,\n"
    "HCOMM_PEER_TIMEOUT_MS, HCOMM_FAILOVER, HCOMM_FALLBACK_IFNAME, HCOMM_FAILOVER_LIMIT, ...).\n"
    "\n"
    "Examples:\n"
    "  # cut a fabric for 3 s with nftables (ranks in network namespaces, fallback on the\n"
    "  # management network), then compare with a fault-free run:\n"
    "  hcomm-run -n 2 hcomm-chaos -b 64K -n 2000 -i 5 -d random -a ring\n"
    "  hcomm-run -n 2 hcomm-chaos -b 64K -n 2000 -i 5 -d random -a ring --expect-digest HEX \\\n"
    "    --fault 'at=2,do=cmd:nft -f /tmp/drop-fabric.nft,for=3,undo=nft delete table inet chaos' "
    "\\\n"
    "    --expect-failovers 1 --expect-failbacks 1 --expect-final-transport tcp --max-op-ms 10000\n"
    "  # stop rank 1 for 2 s:\n"
    "  hcomm-run -n 3 hcomm-chaos -s 6 --fault 'at=2,do=stop:1,for=2' --expect-detection\n"
    "  # kill rank 2: the others must fail with HCOMM_ERR_PEER_LOST within 3 s\n"
    "  hcomm-run -n 4 --keep-going hcomm-chaos -s 10 --fault 'at=2,do=kill:2' \\\n"
    "    --expect-peer-lost --max-detect-ms 3000\n"
    "  # take a link down for 400 ms every 2 s, 6 times (rank 0 runs the commands):\n"
    "  hcomm-run -n 2 hcomm-chaos -s 20 --expect-event pinned \\\n"
    "    --flap 'start=2,period=2000,down_for=400,count=6,down=sh down.sh,up=sh up.sh'\n";

uint64_t need_uint(const char* flag, const char* text, uint64_t min, uint64_t max) {
  const auto v = core::parse_integer(text);
  if (!v || *v < 0 || static_cast<uint64_t>(*v) < min || static_cast<uint64_t>(*v) > max)
    usage_error(std::string(flag) + ": expected a whole number in [" + std::to_string(min) + ", " +
                std::to_string(max) + "], got '" + text + "'");
  return static_cast<uint64_t>(*v);
}

double need_ms(const char* flag, const char* text) {
  auto v = parse_ms(text);
  if (!v)
    usage_error(std::string(flag) + ": expected milliseconds >= 0 (250, 1.5s, ...), got '" + text +
                "'");
  return *v;
}

bool known_event(const std::string& kind) {
  using K = LinkEvent::Kind;
  for (K k : {K::failover, K::failback, K::link_down, K::reconnect_attempt, K::reconnected,
              K::pinned, K::peer_lost})
    if (kind == link_event_name(k)) return true;
  return false;
}

const std::vector<std::string> kOps = {"allreduce", "broadcast", "allgather"};

std::string usage_text() {
  return kUsageHead + algorithm_help(kOps, 25) + kUsageCompression + kUsageTail;
}

enum LongOnly : int {
  kSeed = 256,
  kFault,
  kFlap,
  kExpectDigest,
  kExpectPeerLost,
  kMaxDetect,
  kMaxOp,
  kExpectFailovers,
  kExpectFailbacks,
  kMaxFailovers,
  kExpectEvent,
  kExpectDetection,
  kExpectFinalTransport,
  kCompression,
  kReference,
  kMinDuringPct,
  kMaxSwitches,
  kCheckEvery,
};

}  // namespace

std::optional<double> parse_seconds(const std::string& text) {
  const auto d = core::parse_duration(text, std::chrono::seconds(1));
  if (!d) return std::nullopt;
  return std::chrono::duration<double>(*d).count();
}

std::optional<double> parse_ms(const std::string& text) {
  const auto d = core::parse_duration(text, std::chrono::milliseconds(1));
  if (!d) return std::nullopt;
  return std::chrono::duration<double, std::milli>(*d).count();
}

Options parse_options(int argc, char** argv) {
  static const option kLong[] = {
      {"bytes", required_argument, nullptr, 'b'},
      {"iters", required_argument, nullptr, 'n'},
      {"seconds", required_argument, nullptr, 's'},
      {"interval-ms", required_argument, nullptr, 'i'},
      {"data", required_argument, nullptr, 'd'},
      {"seed", required_argument, nullptr, kSeed},
      {"root", required_argument, nullptr, 'r'},
      {"algo", required_argument, nullptr, 'a'},
      {"fault", required_argument, nullptr, kFault},
      {"flap", required_argument, nullptr, kFlap},
      {"expect-digest", required_argument, nullptr, kExpectDigest},
      {"expect-peer-lost", no_argument, nullptr, kExpectPeerLost},
      {"max-detect-ms", required_argument, nullptr, kMaxDetect},
      {"max-op-ms", required_argument, nullptr, kMaxOp},
      {"expect-failovers", required_argument, nullptr, kExpectFailovers},
      {"expect-failbacks", required_argument, nullptr, kExpectFailbacks},
      {"max-failovers", required_argument, nullptr, kMaxFailovers},
      {"expect-event", required_argument, nullptr, kExpectEvent},
      {"expect-detection", no_argument, nullptr, kExpectDetection},
      {"expect-final-transport", required_argument, nullptr, kExpectFinalTransport},
      {"json", required_argument, nullptr, 'J'},
      {"compression", required_argument, nullptr, kCompression},
      {"reference-s", required_argument, nullptr, kReference},
      {"min-during-pct", required_argument, nullptr, kMinDuringPct},
      {"max-switches", required_argument, nullptr, kMaxSwitches},
      {"check-every", required_argument, nullptr, kCheckEvery},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  Options o;
  bool seconds_given = false;
  opterr = 0;  // our own messages, printed by one rank
  int c;
  while ((c = getopt_long(argc, argv, ":b:n:s:i:d:r:a:J:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'b': {
        const auto v = core::parse_bytes(optarg);
        if (!v || *v == 0 || *v > std::numeric_limits<size_t>::max())
          usage_error(
              std::string("-b: expected a byte count > 0 (4096, 64K, 64KiB, 1M, ...), got '") +
              optarg + "'");
        o.bytes = static_cast<size_t>(*v);
        break;
      }
      case 'n':
        o.iters = need_uint("-n", optarg, 1, uint64_t{1} << 40);
        break;
      case 's': {
        const auto v = parse_seconds(optarg);
        if (!v || *v <= 0 || *v > 1e6)
          usage_error(std::string("-s: expected seconds > 0 (10, 2.5, 500ms, ...), got '") +
                      optarg + "'");
        o.seconds = *v;
        seconds_given = true;
        break;
      }
      case 'i':
        o.interval_ms = need_ms("-i", optarg);
        break;
      case 'd':
        if (std::strcmp(optarg, "exact") == 0) {
          o.data = DataMode::exact;
        } else if (std::strcmp(optarg, "random") == 0) {
          o.data = DataMode::random;
        } else {
          usage_error(std::string("-d: expected exact or random, got '") + optarg + "'");
        }
        break;
      case kSeed:
        o.seed = need_uint("--seed", optarg, 0, std::numeric_limits<int64_t>::max());
        break;
      case 'r':
        o.root = static_cast<int>(need_uint("-r", optarg, 0, 1 << 30));
        break;
      case 'a':
        o.algo = optarg;  // checked once the operation is known
        break;
      case kFault:
        o.faults.emplace_back(optarg);
        break;
      case kFlap:
        o.flaps.emplace_back(optarg);
        break;
      case kExpectDigest: {
        std::string hex = optarg;
        if (hex.rfind("0x", 0) == 0 || hex.rfind("0X", 0) == 0) hex = hex.substr(2);
        char* end = nullptr;
        errno = 0;
        const unsigned long long v = std::strtoull(hex.c_str(), &end, 16);
        if (hex.empty() || hex.size() > 16 || errno != 0 || *end != '\0' ||
            !std::isxdigit(static_cast<unsigned char>(hex[0])))
          usage_error(std::string("--expect-digest: expected up to 16 hex digits, got '") + optarg +
                      "'");
        o.expect_digest = v;
        break;
      }
      case kExpectPeerLost:
        o.expect_peer_lost = true;
        break;
      case kMaxDetect:
        o.max_detect_ms = need_ms("--max-detect-ms", optarg);
        break;
      case kMaxOp:
        o.max_op_ms = need_ms("--max-op-ms", optarg);
        if (*o.max_op_ms < 1) usage_error("--max-op-ms: at least 1 ms");
        break;
      case kExpectFailovers:
        o.expect_failovers = need_uint("--expect-failovers", optarg, 0, 1u << 30);
        break;
      case kExpectFailbacks:
        o.expect_failbacks = need_uint("--expect-failbacks", optarg, 0, 1u << 30);
        break;
      case kMaxFailovers:
        o.max_failovers = need_uint("--max-failovers", optarg, 0, 1u << 30);
        break;
      case kExpectEvent:
        if (!known_event(optarg))
          usage_error(std::string("--expect-event: unknown event kind '") + optarg + "'");
        o.expect_events.emplace_back(optarg);
        break;
      case kExpectDetection:
        o.expect_detection = true;
        break;
      case kExpectFinalTransport:
        if (*optarg == '\0') usage_error("--expect-final-transport needs a transport name");
        o.expect_final_transport = optarg;
        break;
      case 'J':
        o.json_path = optarg;
        break;
      case kCompression:
        if (!hcomm::parse_compression(optarg, &o.compression))
          usage_error(std::string("--compression: '") + optarg +
                      "' is none of none, fp16, bf16, delta, zstd, auto");
        break;
      case kReference: {
        const auto v = parse_seconds(optarg);
        if (!v || *v <= 0 || *v > 3600)
          usage_error(std::string("--reference-s: expected seconds > 0 (5, 2.5, ...), got '") +
                      optarg + "'");
        o.reference_s = *v;
        break;
      }
      case kMinDuringPct: {
        const auto v = core::parse_real(optarg);
        if (!v || *v <= 0 || *v > 1000)
          usage_error(std::string("--min-during-pct: expected a percentage > 0, got '") + optarg +
                      "'");
        o.min_during_pct = *v;
        break;
      }
      case kCheckEvery:
        o.check_every = need_uint("--check-every", optarg, 1, 1u << 30);
        break;
      case kMaxSwitches:
        o.max_switches = need_uint("--max-switches", optarg, 0, 1u << 30);
        break;
      case 'h':
        print_help(usage_text());
      case ':':
        usage_error(std::string(argv[optind - 1]) + " needs a value");
      default:
        usage_error(std::string("unknown option '") + argv[optind - 1] + "'");
    }
  }
  if (optind < argc) o.op = argv[optind++];
  if (optind < argc) usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  if (std::find(kOps.begin(), kOps.end(), o.op) == kOps.end())
    usage_error("unknown operation '" + o.op + "' (allreduce, broadcast, allgather)");
  if (!o.algo.empty()) check_algorithm("-a", o.op, o.algo);
  if (o.iters != 0 && seconds_given) usage_error("give --iters or --seconds, not both");
  if (o.expect_digest && o.iters == 0)
    usage_error("--expect-digest needs --iters: two runs compare the same iterations");
  if (o.min_during_pct && o.reference_s == 0)
    usage_error("--min-during-pct needs --reference-s: the throughput it compares with");
  return o;
}

}  // namespace hcomm::tools::chaos
