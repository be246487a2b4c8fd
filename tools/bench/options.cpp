// hcomm-bench's command line: getopt parsing with nccl-tests' flags, checked strictly (a bad
// value is a usage error, never a guess), and the sweep of sizes the flags describe.
#include "bench/options.hpp"

#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>

#include "algorithm_names.hpp"
#include "bench/op_table.hpp"
#include "core/parse.hpp"
#include "usage.hpp"

namespace hcomm::tools::bench {
namespace {

// The usage text; the algorithms come from the library (algorithm_names.hpp).
const char kUsageHead[] =
    "usage: hcomm-bench [OP] [flags]\n"
    "OP: allreduce (default), broadcast, reduce, allgather, reduce_scatter, alltoall, gather,\n"
    "    scatter, sendrecv (rank r sends to r+1 and receives from r-1), barrier\n"
    "  -b, --minbytes N      smallest size (default 8): a byte count, 4096, 64K, 64KiB, 1M (K, M,\n"
    "                        G: x1024, either case)\n"
    "  -e, --maxbytes N      largest size (default 64M)\n"
    "  -f, --stepfactor N    multiply the size by N between sizes (default 2)\n"
    "  -i, --stepbytes N     add N bytes between sizes instead (nonzero overrides -f)\n"
    "  -n, --iters N         timed iterations per size (default 20)\n"
    "  -w, --warmup_iters N  warm-up iterations per size (default 5)\n"
    "  -c, --check 0|1       verify every element of the result (default 1)\n"
    "  -d, --datatype T      int8/char, uint8, int32/int, int64, float16/half, bfloat16,\n"
    "                        float32/float, float64/double (default float32)\n"
    "  -o, --op R            sum (default), prod, min, max, avg; band, bor, bxor (integers)\n"
    "  -r, --root R          root of broadcast, reduce, gather, scatter (default 0)\n"
    "  -a, --algo A          force the algorithm (auto: the library's choice); by operation:\n";
const char kUsageTail[] =
    "  -J, --json FILE       also write the results as JSON (rank 0)\n"
    "  -T, --duration S      tenant mode: run the first size (-b) back to back for S seconds\n"
    "                        (2.5, 500ms) instead of -n iterations per size; every rank\n"
    "                        stops at the same iteration. Rank 0 prints every rank's iterations,\n"
    "                        elapsed time, payload sent to ranks on other hosts in Gbit/s (1e9\n"
    "                        bit/s) and op latency median/p99/mean; -J adds per-rank samples of\n"
    "                        the cumulative bytes (unix time, bytes) about every 100 ms\n"
    "      --qos SPEC        this communicator's QoS class, as HCOMM_QOS: min=N,max=N,priority=P\n"
    "                        (any subset; shares in % of HCOMM_LINK_GBPS, priority 0..7); set\n"
    "                        with Communicator::set_qos() right after joining (refused: exit 2)\n"
    "      --compression C   payload codec (Communicator::set_compression): none, fp16, bf16,\n"
    "                        delta, zstd, auto. Adds the column wire% (bytes the frames\n"
    "                        carried / payload bytes, this rank, timed iterations); with fp16\n"
    "                        or bf16 float inputs get fractions and -c checks the README's\n"
    "                        error bound; lossless codecs are checked bit-exact\n"
    "  -h, --help            this text\n"
    "Sizes follow nccl-tests: size(B) is the larger of the send and the receive buffer of one\n"
    "rank, rounded down to a multiple of the element size (for allgather, reduce_scatter,\n"
    "alltoall, gather and scatter: of world_size elements); count is the count argument of the\n"
    "call, i.e. elements per rank block for those five and size/element size otherwise.\n"
    "algbw = size / time (1 GB = 1e9 B); busbw = algbw * 2(n-1)/n for allreduce, (n-1)/n for\n"
    "allgather, reduce_scatter and alltoall, 1 otherwise. time is the largest over ranks of each\n"
    "rank's median iteration. Exit status: 0, 1 when a result is wrong or an operation fails,\n"
    "2 on bad usage.\n";

size_t parse_bytes(const char* flag, const char* s) {
  const auto bytes = core::parse_bytes(s);
  if (!bytes)
    usage_error(std::string(flag) + ": expected a byte count (4096, 64K, 64KiB, 1M, ...), got '" +
                s + "'");
  return static_cast<size_t>(*bytes);
}

double parse_seconds(const char* flag, const char* s) {
  const auto d = core::parse_duration(s, std::chrono::seconds(1));
  const double v = d ? std::chrono::duration<double>(*d).count() : 0;
  // At most a day: a typo of a few digits too many should not hold a cluster for months.
  if (!(v > 0) || v > 86400)
    usage_error(std::string(flag) + ": expected seconds in (0, 86400] (2.5, 500ms, ...), got '" +
                s + "'");
  return v;
}

long parse_int(const char* flag, const char* s, long lo, long hi) {
  const auto v = core::parse_integer(s);
  if (!v || *v < lo || *v > hi)
    usage_error(std::string(flag) + ": expected an integer in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "], got '" + s + "'");
  return static_cast<long>(*v);
}

DataType parse_dtype_arg(const char* s) {
  DataType t;
  if (std::strcmp(s, "char") == 0) return DataType::int8;  // nccl-tests' name for int8
  if (!hcomm::parse_dtype(s, &t)) usage_error(std::string("-d: unknown data type '") + s + "'");
  return t;
}

constexpr int kQosFlag = 1000;  // long-only options
constexpr int kCompressionFlag = 1001;

std::string usage_text() {
  return kUsageHead + algorithm_help(op_names(), 24) + kUsageTail;
}

}  // namespace

Options parse_options(int argc, char** argv) {
  static const option kLong[] = {{"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"stepbytes", required_argument, nullptr, 'i'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"datatype", required_argument, nullptr, 'd'},
                                 {"op", required_argument, nullptr, 'o'},
                                 {"root", required_argument, nullptr, 'r'},
                                 {"algo", required_argument, nullptr, 'a'},
                                 {"json", required_argument, nullptr, 'J'},
                                 {"duration", required_argument, nullptr, 'T'},
                                 {"qos", required_argument, nullptr, kQosFlag},
                                 {"compression", required_argument, nullptr, kCompressionFlag},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  Options o;
  opterr = 0;  // our own messages, printed by one rank
  int c;
  while ((c = getopt_long(argc, argv, ":b:e:f:i:n:w:c:d:o:r:a:J:T:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'b':
        o.min_bytes = parse_bytes("-b", optarg);
        break;
      case 'e':
        o.max_bytes = parse_bytes("-e", optarg);
        break;
      case 'f':
        o.step_factor = static_cast<size_t>(parse_int("-f", optarg, 2, 1 << 20));
        break;
      case 'i':
        o.step_bytes = parse_bytes("-i", optarg);
        break;
      case 'n':
        o.iters = static_cast<int>(parse_int("-n", optarg, 1, 1 << 24));
        break;
      case 'w':
        o.warmup = static_cast<int>(parse_int("-w", optarg, 0, 1 << 24));
        break;
      case 'c':
        o.check = parse_int("-c", optarg, 0, 1) == 1;
        break;
      case 'd':
        o.dtype = parse_dtype_arg(optarg);
        break;
      case 'o':
        if (!hcomm::parse_reduce_op(optarg, &o.redop))
          usage_error(std::string("-o: unknown reduce op '") + optarg + "'");
        break;
      case 'r':
        o.root = static_cast<int>(parse_int("-r", optarg, 0, 1 << 30));
        break;
      case 'a':
        o.algo = optarg;  // checked once the operation is known
        break;
      case 'J':
        o.json_path = optarg;
        break;
      case 'T':
        o.duration_s = parse_seconds("-T", optarg);
        break;
      case kQosFlag: {
        auto qos = QosClass::parse(optarg);
        if (!qos) usage_error(std::string("--qos: '") + optarg + "': " + qos.status().message());
        o.qos = *qos;
        o.has_qos = true;
        break;
      }
      case kCompressionFlag:
        if (!hcomm::parse_compression(optarg, &o.compression))
          usage_error(std::string("--compression: '") + optarg +
                      "' is none of none, fp16, bf16, delta, zstd, auto");
        o.has_compression = true;
        break;
      case 'h':
        print_help(usage_text());
      case ':':
        usage_error(std::string(argv[optind - 1]) + " needs a value");
      default:
        usage_error(std::string("unknown flag '") + argv[optind - 1] + "'");
    }
  }
  if (optind < argc) o.op = argv[optind++];
  if (optind < argc) usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  if (find_op(o.op) == nullptr) usage_error("unknown operation '" + o.op + "'");
  if (!o.algo.empty()) check_algorithm("-a", o.op, o.algo);
  if (o.min_bytes > o.max_bytes) usage_error("-b is larger than -e");
  if (o.min_bytes == 0 && o.step_bytes == 0) usage_error("-b 0 needs -i (0 * factor stays 0)");
  return o;
}

std::vector<size_t> size_sweep(const Options& o) {
  std::vector<size_t> sizes;
  for (size_t s = o.min_bytes; s <= o.max_bytes;) {
    sizes.push_back(s);
    const size_t limit = std::numeric_limits<size_t>::max();
    if (o.step_bytes != 0) {
      if (s > limit - o.step_bytes) break;
      s += o.step_bytes;
    } else {
      if (s > limit / o.step_factor) break;
      s *= o.step_factor;
    }
  }
  return sizes;
}

}  // namespace hcomm::tools::bench
