// hcomm-bench: an nccl-tests compatible benchmark of every hcomm operation, over the public API
// only, so that it measures what applications get. It joins with Communicator::create_from_env(),
// so it runs under hcomm-run, srun, mpirun or torchrun alike.
//
// Per size: warm-up iterations, a barrier, then timed iterations back to back, each timed alone on
// every rank; a rank's time is its median iteration, the reported time the slowest rank's median.
// With -c 1 the operation then runs once more on a deterministic input and every element is
// compared with a reference computed here, independently of the library.
#include <getopt.h>
#include <unistd.h>

#include <hcomm/hcomm.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

using hcomm::Communicator;
using hcomm::DataType;
using hcomm::ReduceOp;
using hcomm::Status;
using hcomm::Work;
using Clock = std::chrono::steady_clock;

constexpr int kExitWrong = 1;  // also: a library error
constexpr int kExitUsage = 2;

const char kUsage[] =
    "usage: hcomm-bench [OP] [flags]\n"
    "OP: allreduce (default), broadcast, reduce, allgather, reduce_scatter, alltoall, gather,\n"
    "    scatter, sendrecv (rank r sends to r+1 and receives from r-1), barrier\n"
    "  -b, --minbytes N      smallest size (default 8); K, M, G suffixes (x1024)\n"
    "  -e, --maxbytes N      largest size (default 64M)\n"
    "  -f, --stepfactor N    multiply the size by N between sizes (default 2)\n"
    "  -i, --stepbytes N     add N bytes between sizes instead (nonzero overrides -f)\n"
    "  -n, --iters N         timed iterations per size (default 20)\n"
    "  -w, --warmup_iters N  warm-up iterations per size (default 5)\n"
    "  -c, --check 0|1       verify every element of the result (default 1)\n"
    "  -d, --datatype T      int8/char, uint8, int32/int, int64, float16/half, bfloat16,\n"
    "                        float32/float, float64/double (default float32)\n"
    "  -o, --op R            sum (default), prod, min, max, avg\n"
    "  -r, --root R          root of broadcast, reduce, gather, scatter (default 0)\n"
    "  -a, --algo A          force the algorithm: ring, tree, rd, hd, direct, auto\n"
    "  -J, --json FILE       also write the results as JSON (rank 0)\n"
    "  -h, --help            this text\n"
    "Sizes follow nccl-tests: size(B) is the larger of the send and the receive buffer of one\n"
    "rank, rounded down to a multiple of the element size (for allgather, reduce_scatter,\n"
    "alltoall, gather and scatter: of world_size elements); count is the count argument of the\n"
    "call, i.e. elements per rank block for those five and size/element size otherwise.\n"
    "algbw = size / time (1 GB = 1e9 B); busbw = algbw * 2(n-1)/n for allreduce, (n-1)/n for\n"
    "allgather, reduce_scatter and alltoall, 1 otherwise. time is the largest over ranks of each\n"
    "rank's median iteration. Exit status: 0, 1 when a result is wrong or an operation fails,\n"
    "2 on bad usage.\n";

// ---------------------------------------------------------------------------------------------
// Options

struct Options {
  std::string op = "allreduce";
  size_t min_bytes = 8;
  size_t max_bytes = size_t{64} << 20;
  size_t step_factor = 2;
  size_t step_bytes = 0;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  DataType dtype = DataType::float32;
  ReduceOp redop = ReduceOp::sum;
  int root = 0;
  std::string algo;  // empty: the library's choice
  std::string json_path;
};

// Usage errors are reported by one rank only: every rank parses the same arguments. The rank is
// read from the launcher's environment because the communicator does not exist yet.
bool is_lead_rank() {
  auto cfg = hcomm::Config::from_env();
  return !cfg.ok() || cfg->rank <= 0;
}

[[noreturn]] void usage_error(const std::string& msg) {
  if (is_lead_rank()) std::fprintf(stderr, "hcomm-bench: %s (-h for help)\n", msg.c_str());
  std::exit(kExitUsage);
}

// "64M" -> 67108864. Rejects signs, junk and overflow rather than guessing.
size_t parse_bytes(const char* flag, const char* s) {
  if (!std::isdigit(static_cast<unsigned char>(*s)))
    usage_error(std::string(flag) + ": not a size: '" + s + "'");
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  static const char kSuffixes[] = "KMG";  // x1024 each, as nccl-tests
  const char* suffix = *end == '\0'
                           ? nullptr
                           : std::strchr(kSuffixes, std::toupper(static_cast<unsigned char>(*end)));
  const unsigned shift = suffix == nullptr ? 0 : 10 * static_cast<unsigned>(suffix - kSuffixes + 1);
  if (suffix != nullptr) ++end;
  if (errno != 0 || *end != '\0' || v > (std::numeric_limits<size_t>::max() >> shift))
    usage_error(std::string(flag) + ": not a size: '" + s + "'");
  return static_cast<size_t>(v) << shift;
}

long parse_int(const char* flag, const char* s, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
    usage_error(std::string(flag) + ": expected an integer in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "], got '" + s + "'");
  return v;
}

DataType parse_dtype_arg(const char* s) {
  DataType t;
  if (std::strcmp(s, "char") == 0) return DataType::int8;  // nccl-tests' name for int8
  if (!hcomm::parse_dtype(s, &t)) usage_error(std::string("-d: unknown data type '") + s + "'");
  return t;
}

constexpr const char* kAlgos[] = {"ring", "tree", "rd", "hd", "direct", "auto"};

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
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  Options o;
  opterr = 0;  // our own messages, printed by one rank
  int c;
  while ((c = getopt_long(argc, argv, ":b:e:f:i:n:w:c:d:o:r:a:J:h", kLong, nullptr)) != -1) {
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
        if (std::find_if(std::begin(kAlgos), std::end(kAlgos), [](const char* a) {
              return std::strcmp(a, optarg) == 0;
            }) == std::end(kAlgos))
          usage_error(std::string("-a: unknown algorithm '") + optarg +
                      "' (ring, tree, rd, hd, direct, auto)");
        o.algo = optarg;
        break;
      case 'J':
        o.json_path = optarg;
        break;
      case 'h':
        if (is_lead_rank()) std::fputs(kUsage, stdout);
        std::exit(0);
      case ':':
        usage_error(std::string(argv[optind - 1]) + " needs a value");
      default:
        usage_error(std::string("unknown flag '") + argv[optind - 1] + "'");
    }
  }
  if (optind < argc) o.op = argv[optind++];
  if (optind < argc) usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  if (o.min_bytes > o.max_bytes) usage_error("-b is larger than -e");
  if (o.min_bytes == 0 && o.step_bytes == 0) usage_error("-b 0 needs -i (0 * factor stays 0)");
  return o;
}

// The sizes to run, nccl-tests' loop: from -b while <= -e, times -f or plus -i.
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

// ---------------------------------------------------------------------------------------------
// Elements: stored in any dtype, read back as double.

bool is_float(DataType t) {
  return t == DataType::float16 || t == DataType::bfloat16 || t == DataType::float32 ||
         t == DataType::float64;
}

// An integer reduced in the element type wraps around (two's complement), as the library does.
double wrap(DataType t, double v) {
  const auto x = static_cast<int64_t>(v);
  switch (t) {
    case DataType::int8:
      return static_cast<int8_t>(x);
    case DataType::uint8:
      return static_cast<uint8_t>(x);
    case DataType::int32:
      return static_cast<int32_t>(x);
    default:
      return static_cast<double>(x);
  }
}

// binary16 for the small integers and NaN that this tool stores (exact for |v| < 2048).
uint16_t half_from_small_int(double v) {
  if (std::isnan(v)) return 0x7e00;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  auto m = static_cast<uint32_t>(std::fabs(v));
  if (m == 0) return sign;
  int e = 0;
  while ((m >> (e + 1)) != 0) ++e;  // e = floor(log2(m))
  return static_cast<uint16_t>(sign | ((e + 15) << 10) | ((m << (10 - e)) & 0x3ff));
}

double half_to_double(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0) return s * std::ldexp(m, -24);
  if (e == 31) return m != 0 ? std::nan("") : s * HUGE_VAL;
  return s * std::ldexp(m + 1024, e - 25);
}

void store(DataType t, void* buf, size_t i, double v) {
  switch (t) {
    case DataType::int8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(wrap(t, v));
      break;
    case DataType::uint8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(wrap(t, v));
      break;
    case DataType::int32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case DataType::int64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
    case DataType::float16:
      static_cast<uint16_t*>(buf)[i] = half_from_small_int(v);
      break;
    case DataType::bfloat16: {  // the upper half of a binary32: exact for small integers
      const float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      static_cast<uint16_t*>(buf)[i] = static_cast<uint16_t>(bits >> 16);
      break;
    }
    case DataType::float32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case DataType::float64:
      static_cast<double*>(buf)[i] = v;
      break;
  }
}

double load(DataType t, const void* buf, size_t i) {
  switch (t) {
    case DataType::int8:
      return static_cast<const int8_t*>(buf)[i];
    case DataType::uint8:
      return static_cast<const uint8_t*>(buf)[i];
    case DataType::int32:
      return static_cast<const int32_t*>(buf)[i];
    case DataType::int64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case DataType::float16:
      return half_to_double(static_cast<const uint16_t*>(buf)[i]);
    case DataType::bfloat16: {
      const uint32_t bits = uint32_t{static_cast<const uint16_t*>(buf)[i]} << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case DataType::float32:
      return static_cast<const float*>(buf)[i];
    case DataType::float64:
      return static_cast<const double*>(buf)[i];
  }
  return std::nan("");
}

// ---------------------------------------------------------------------------------------------
// One size of one operation: its geometry, input pattern and reference.

struct Case {
  int rank = 0, n = 1, root = 0;
  size_t count = 0;  // the count argument of the call (elements per block for blocked ops)
  DataType dtype = DataType::float32;
  ReduceOp redop = ReduceOp::sum;
  bool reduces = false;
};

// Input element `index` of rank `r`: small integers, so that every dtype holds them and every
// partial result exactly, whatever order the library combines ranks in (bfloat16 holds integers
// up to 256: sums of values in [-4, 4] stay exact up to 64 ranks). Products stay within +-2.
double pattern(const Case& c, int r, size_t index) {
  const bool is_unsigned = c.dtype == DataType::uint8;
  if (c.reduces && c.redop == ReduceOp::prod) {
    if (index % static_cast<size_t>(c.n) == static_cast<size_t>(r)) return 2;
    return ((index + static_cast<size_t>(r)) % 3 == 0 && !is_unsigned) ? -1 : 1;
  }
  const double v = static_cast<double>((static_cast<size_t>(r) * 7 + index * 3 + 1) % 9) - 4;
  return is_unsigned ? v + 4 : v;
}

double combine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::prod:
      return a * b;
    case ReduceOp::min:
      return std::min(a, b);
    case ReduceOp::max:
      return std::max(a, b);
    default:
      return a + b;  // sum, avg
  }
}

// Element `index` reduced over all ranks, with the library's documented semantics: integers wrap
// in the element type, and integer avg divides the wrapped sum truncating toward zero.
double reduced(const Case& c, size_t index) {
  double acc = pattern(c, 0, index);
  for (int r = 1; r < c.n; ++r) acc = combine(c.redop, acc, pattern(c, r, index));
  if (!is_float(c.dtype)) acc = wrap(c.dtype, acc);
  if (c.redop == ReduceOp::avg)
    acc = is_float(c.dtype) ? acc / c.n : static_cast<double>(static_cast<int64_t>(acc) / c.n);
  return acc;
}

// Only a float avg can be inexact (one rounding of the quotient); everything else must be equal.
bool matches(const Case& c, double got, double want) {
  if (!is_float(c.dtype)) return got == wrap(c.dtype, want);
  if (got == want) return true;
  if (c.redop != ReduceOp::avg || !c.reduces || std::isnan(got)) return false;
  double eps = 1e-12;
  if (c.dtype == DataType::float16) eps = 2.0 / 1024;
  if (c.dtype == DataType::bfloat16) eps = 2.0 / 128;
  if (c.dtype == DataType::float32) eps = 1e-6;
  return std::fabs(got - want) <= eps * std::max(1.0, std::fabs(want));
}

// A value the result must overwrite: NaN for floats, never equal to the expected integer else.
double sentinel(const Case& c, double want) {
  return is_float(c.dtype) ? std::nan("") : wrap(c.dtype, want + 1);
}

struct Buffers {
  std::vector<uint64_t> send_storage, recv_storage;  // uint64_t: aligned for every dtype
  size_t send_elems = 0, recv_elems = 0;
  void* send = nullptr;
  void* recv = nullptr;
};

// One operation: its geometry, how to start it, and where its result comes from. Element counts
// of 0 mean "no buffer on this rank" (the API lets non-roots pass nullptr there).
struct OpSpec {
  const char* name;
  bool reduces;  // takes -o (else the redop column says "none", as in nccl-tests)
  bool rooted;   // takes -r (else the root column says -1)
  bool blocked;  // the buffer is world_size blocks of `count` elements
  double (*bus_factor)(int n);
  size_t (*send_elems)(const Case&);
  size_t (*recv_elems)(const Case&);
  double (*send_value)(const Case&, size_t k);  // input element k of this rank
  double (*expected)(const Case&, size_t k);    // result element k of this rank
  bool recv_is_root_input;                      // broadcast: the root's buffer is its input
  Work (*start)(Communicator&, const Case&, const Buffers&);
};

double factor_one(int) {
  return 1;
}
double factor_allreduce(int n) {
  return 2.0 * (n - 1) / n;
}
double factor_gather_like(int n) {
  return static_cast<double>(n - 1) / n;
}

size_t none(const Case&) {
  return 0;
}
size_t one_block(const Case& c) {
  return c.count;
}
size_t all_blocks(const Case& c) {
  return c.count * static_cast<size_t>(c.n);
}
size_t one_block_on_root(const Case& c) {
  return c.rank == c.root ? c.count : 0;
}
size_t all_blocks_on_root(const Case& c) {
  return c.rank == c.root ? all_blocks(c) : 0;
}

double mine(const Case& c, size_t k) {
  return pattern(c, c.rank, k);
}
double roots(const Case& c, size_t k) {
  return pattern(c, c.root, k);
}
double reduced_here(const Case& c, size_t k) {
  return reduced(c, k);
}
double reduced_my_block(const Case& c, size_t k) {
  return reduced(c, c.rank * c.count + k);
}
double gathered(const Case& c, size_t k) {
  return pattern(c, static_cast<int>(k / c.count), k % c.count);
}
double from_everyone(const Case& c, size_t k) {  // block q of rank r = block r of rank q's send
  return pattern(c, static_cast<int>(k / c.count), c.rank * c.count + k % c.count);
}
double roots_my_block(const Case& c, size_t k) {
  return pattern(c, c.root, c.rank * c.count + k);
}
double from_left(const Case& c, size_t k) {
  return pattern(c, (c.rank + c.n - 1) % c.n, k);
}

// Columns: name, reduces, rooted, blocked, bus_factor, send_elems, recv_elems, send_value,
// expected, recv_is_root_input, start.
const OpSpec kOps[] = {
    {"allreduce", true, false, false, factor_allreduce, one_block, one_block, mine, reduced_here,
     false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.allreduce_async(b.send, b.recv, c.count, c.dtype, c.redop);
     }},
    {"broadcast", false, true, false, factor_one, none, one_block, nullptr, roots, true,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.broadcast_async(b.recv, c.count, c.dtype, c.root);
     }},
    {"reduce", true, true, false, factor_one, one_block, one_block_on_root, mine, reduced_here,
     false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.reduce_async(b.send, b.recv, c.count, c.dtype, c.redop, c.root);
     }},
    {"allgather", false, false, true, factor_gather_like, one_block, all_blocks, mine, gathered,
     false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.allgather_async(b.send, b.recv, c.count, c.dtype);
     }},
    {"reduce_scatter", true, false, true, factor_gather_like, all_blocks, one_block, mine,
     reduced_my_block, false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.reduce_scatter_async(b.send, b.recv, c.count, c.dtype, c.redop);
     }},
    {"alltoall", false, false, true, factor_gather_like, all_blocks, all_blocks, mine,
     from_everyone, false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.alltoall_async(b.send, b.recv, c.count, c.dtype);
     }},
    {"gather", false, true, true, factor_one, one_block, all_blocks_on_root, mine, gathered, false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.gather_async(b.send, b.recv, c.count, c.dtype, c.root);
     }},
    {"scatter", false, true, true, factor_one, all_blocks_on_root, one_block, roots, roots_my_block,
     false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.scatter_async(b.send, b.recv, c.count, c.dtype, c.root);
     }},
    {"sendrecv", false, false, false, factor_one, one_block, one_block, mine, from_left, false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       using P = hcomm::PointToPointOp;
       // One batch, so that the ring of exchanges cannot deadlock whatever the order.
       return m.batch_async(
           {P{P::Kind::send, b.send, c.count, c.dtype, (c.rank + 1) % c.n, 0},
            P{P::Kind::recv, b.recv, c.count, c.dtype, (c.rank + c.n - 1) % c.n, 0}});
     }},
    {"barrier", false, false, false, factor_one, none, none, nullptr, nullptr, false,
     [](Communicator& m, const Case&, const Buffers&) { return m.barrier_async(); }},
};

const OpSpec* find_op(const std::string& name) {
  for (const OpSpec& s : kOps)
    if (name == s.name) return &s;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Running

struct Row {
  size_t bytes = 0, count = 0;
  std::string algo;
  double time_us = 0, algbw = 0, busbw = 0;
  int64_t wrong = -1;  // -1: not checked
};

class Runner {
 public:
  Runner(Communicator& comm, const Options& o, const OpSpec& spec)
      : comm_(comm), o_(o), spec_(spec) {
    base_.rank = comm.rank();
    base_.n = comm.size();
    base_.root = spec.rooted ? o.root : -1;
    base_.dtype = o.dtype;
    base_.redop = o.redop;
    base_.reduces = spec.reduces;
  }

  // nccl-tests' rounding: whole elements, and whole blocks of world_size elements when blocked.
  Case case_for(size_t nominal_bytes) const {
    Case c = base_;
    const size_t unit = hcomm::dtype_size(c.dtype) * (spec_.blocked ? static_cast<size_t>(c.n) : 1);
    c.count = nominal_bytes / unit;
    return c;
  }
  size_t bytes_of(const Case& c) const {  // the size column; barrier runs with count 0
    return c.count * hcomm::dtype_size(c.dtype) * (spec_.blocked ? static_cast<size_t>(c.n) : 1);
  }

  Row run(size_t nominal_bytes) {
    const Case c = case_for(nominal_bytes);
    Buffers b = allocate(c);
    fill(c, b, /*sentinels=*/false);
    Row row;
    row.bytes = bytes_of(c);
    row.count = c.count;
    // The library sizes its choice by the count as passed (one rank's block for the block ops).
    row.algo = comm_.algorithm_for(spec_.name, c.count * hcomm::dtype_size(c.dtype));
    row.time_us = measure(c, b);
    if (row.time_us > 0) row.algbw = static_cast<double>(row.bytes) / row.time_us / 1e3;
    row.busbw = row.algbw * spec_.bus_factor(c.n);
    if (o_.check) row.wrong = check(c, b);
    return row;
  }

 private:
  [[noreturn]] void fail(const char* what, const Status& st) const {
    std::fprintf(stderr, "hcomm-bench: rank %d: %s failed: %s\n", comm_.rank(), what,
                 st.to_string().c_str());
    std::exit(kExitWrong);
  }

  void run_once(const Case& c, const Buffers& b) {
    Status st = spec_.start(comm_, c, b).wait(comm_.config().op_timeout);
    if (!st.ok()) fail(spec_.name, st);
  }

  void barrier() {
    Status st = comm_.barrier();
    if (!st.ok()) fail("barrier", st);
  }

  static void* make(std::vector<uint64_t>* storage, size_t bytes, bool present) {
    // Present buffers are never null, even for 0 elements: null means "none" to the API.
    storage->assign(bytes / sizeof(uint64_t) + 1, 0);
    return present ? storage->data() : nullptr;
  }

  Buffers allocate(const Case& c) const {
    const size_t es = hcomm::dtype_size(c.dtype);
    Buffers b;
    b.send_elems = spec_.send_elems(c);
    b.recv_elems = spec_.recv_elems(c);
    // A rank without a buffer passes nullptr, as the API allows; 0-count ops still get one.
    const bool has_send = b.send_elems > 0 || spec_.send_elems(with_count(c, 1)) > 0;
    const bool has_recv = b.recv_elems > 0 || spec_.recv_elems(with_count(c, 1)) > 0;
    b.send = make(&b.send_storage, b.send_elems * es, has_send);
    b.recv = make(&b.recv_storage, b.recv_elems * es, has_recv);
    return b;
  }

  static Case with_count(Case c, size_t count) {
    c.count = count;
    return c;
  }

  // Inputs get the pattern; with `sentinels`, results get a value they must overwrite (only the
  // check needs that, and computing it costs a reference per element).
  void fill(const Case& c, const Buffers& b, bool sentinels) const {
    for (size_t k = 0; k < b.send_elems; ++k) store(c.dtype, b.send, k, spec_.send_value(c, k));
    const bool recv_is_input = spec_.recv_is_root_input && c.rank == c.root;
    if (!recv_is_input && !sentinels) return;
    for (size_t k = 0; k < b.recv_elems; ++k) {
      const double want = spec_.expected(c, k);
      store(c.dtype, b.recv, k, recv_is_input ? want : sentinel(c, want));
    }
  }

  double measure(const Case& c, const Buffers& b) {
    for (int i = 0; i < o_.warmup; ++i) run_once(c, b);
    barrier();  // start the timed iterations together
    std::vector<double> us(static_cast<size_t>(o_.iters));
    for (double& t : us) {
      const auto t0 = Clock::now();
      run_once(c, b);
      t = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    }
    // The median resists a stray slow iteration; the slowest rank's median is what a step that
    // waits for all ranks sees.
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    double median = us[us.size() / 2], slowest = 0;
    Status st = comm_.allreduce(&median, &slowest, 1, DataType::float64, ReduceOp::max);
    if (!st.ok()) fail("allreduce of the times", st);
    return slowest;
  }

  // Runs the operation once more on fresh inputs and counts wrong elements over all ranks.
  int64_t check(const Case& c, const Buffers& b) {
    fill(c, b, /*sentinels=*/true);
    run_once(c, b);
    int64_t wrong = 0, total = 0;
    for (size_t k = 0; k < b.recv_elems; ++k)
      if (!matches(c, load(c.dtype, b.recv, k), spec_.expected(c, k))) ++wrong;
    Status st = comm_.allreduce(&wrong, &total, 1, DataType::int64, ReduceOp::sum);
    if (!st.ok()) fail("allreduce of the wrong counts", st);
    return total;
  }

  Communicator& comm_;
  const Options& o_;
  const OpSpec& spec_;
  Case base_;
};

// ---------------------------------------------------------------------------------------------
// Reporting (rank 0)

class Progress {
 public:
  Progress(bool enabled, size_t total) : enabled_(enabled && isatty(2)), total_(total) {}
  // Shown only once the run has taken ~2 s: short runs stay quiet.
  void update(size_t done) {
    if (!enabled_ || Clock::now() - start_ < std::chrono::seconds(2)) return;
    constexpr size_t kWidth = 30;
    const size_t filled = total_ == 0 ? kWidth : done * kWidth / total_;
    std::fprintf(stderr, "\r[%s%s] %zu/%zu sizes", std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, ' ').c_str(), done, total_);
    std::fflush(stderr);
    shown_ = true;
  }
  void erase() {
    if (shown_) std::fputs("\r\033[K", stderr);
    shown_ = false;
  }

 private:
  bool enabled_;
  size_t total_;
  Clock::time_point start_ = Clock::now();
  bool shown_ = false;
};

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

class Report {
 public:
  Report(const Options& o, const OpSpec& spec, int world_size)
      : o_(o), spec_(spec), n_(world_size) {}

  const char* redop_name() const {
    return spec_.reduces ? hcomm::reduce_op_name(o_.redop) : "none";
  }
  int root() const { return spec_.rooted ? o_.root : -1; }

  void header() const {
    std::printf("# hcomm-bench %s: world_size %d, dtype %s, redop %s, root %d, algo %s\n",
                spec_.name, n_, hcomm::dtype_name(o_.dtype), redop_name(), root(),
                o_.algo.empty() ? "(library's choice)" : o_.algo.c_str());
    if (o_.step_bytes != 0)
      std::printf("#  minBytes %zu maxBytes %zu step: %zu(bytes)", o_.min_bytes, o_.max_bytes,
                  o_.step_bytes);
    else
      std::printf("#  minBytes %zu maxBytes %zu step: %zu(factor)", o_.min_bytes, o_.max_bytes,
                  o_.step_factor);
    std::printf(" warmup iters: %d iters: %d validation: %d\n#\n", o_.warmup, o_.iters,
                o_.check ? 1 : 0);
    std::printf("# %10s  %12s  %8s  %6s  %6s  %8s  %9s  %7s  %7s  %6s\n", "size", "count", "type",
                "redop", "root", "algo", "time", "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %8s  %9s  %7s  %7s  %6s\n", "(B)", "(elements)", "",
                "", "", "", "(us)", "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }

  void row(const Row& r) {
    rows_.push_back(r);
    const std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
    std::printf("  %10zu  %12zu  %8s  %6s  %6d  %8s  %9.2f  %7.2f  %7.2f  %6s\n", r.bytes, r.count,
                hcomm::dtype_name(o_.dtype), redop_name(), root(),
                r.algo.empty() ? "-" : r.algo.c_str(), r.time_us, r.algbw, r.busbw, wrong.c_str());
    std::fflush(stdout);
  }

  int64_t total_wrong() const {
    int64_t total = 0;
    for (const Row& r : rows_) total += std::max<int64_t>(r.wrong, 0);
    return total;
  }

  void footer() const {
    double sum = 0;
    for (const Row& r : rows_) sum += r.busbw;
    std::printf("# Out of bounds values : %" PRId64 " %s\n", total_wrong(),
                total_wrong() == 0 ? "OK" : "FAILED");
    std::printf("# Avg bus bandwidth    : %g\n#\n", rows_.empty() ? 0.0 : sum / rows_.size());
    std::fflush(stdout);
  }

  bool write_json(FILE* f) const {
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
                   "\"algbw\":%.9g,\"busbw\":%.9g,\"wrong\":%s}",
                   i == 0 ? "" : ",", common.c_str(), r.bytes, r.count, json_string(r.algo).c_str(),
                   r.time_us, r.algbw, r.busbw, wrong.c_str());
    }
    std::fprintf(f, "]}\n");
    return std::ferror(f) == 0;
  }

 private:
  const Options& o_;
  const OpSpec& spec_;
  int n_;
  std::vector<Row> rows_;
};

std::unique_ptr<Communicator> join(const Options& o) {
  auto cfg = hcomm::Config::from_env();
  if (!cfg) {
    std::fprintf(stderr, "hcomm-bench: %s\n", cfg.status().to_string().c_str());
    std::exit(kExitUsage);
  }
  if (!o.algo.empty()) cfg->algo = o.op + "=" + o.algo;  // code wins over HCOMM_ALGO
  auto comm = Communicator::create(*cfg);
  if (!comm) {
    // A rejected -a is a usage error; anything else (a rank missing, ...) is a failure.
    const bool usage = !o.algo.empty() && comm.status().code() == hcomm::HCOMM_ERR_INVALID_ARG;
    // Every rank rejects -a alike: one says so. Other failures differ by rank: all say.
    if (!usage || cfg->rank <= 0)
      std::fprintf(stderr, "hcomm-bench: rank %d: cannot create the communicator: %s\n", cfg->rank,
                   comm.status().to_string().c_str());
    std::exit(usage ? kExitUsage : kExitWrong);
  }
  return std::move(*comm);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  const OpSpec* spec = find_op(o.op);
  if (spec == nullptr) usage_error("unknown operation '" + o.op + "'");

  // Opened before joining, so that a bad path fails at once rather than after the run.
  FILE* json = nullptr;
  if (!o.json_path.empty() && is_lead_rank()) {
    json = std::fopen(o.json_path.c_str(), "w");
    if (json == nullptr)
      usage_error("-J: cannot write '" + o.json_path + "': " + std::strerror(errno));
  }

  std::unique_ptr<Communicator> comm = join(o);
  const bool lead = comm->rank() == 0;
  if (spec->rooted && o.root >= comm->size()) {
    if (lead) std::fprintf(stderr, "hcomm-bench: -r %d: only %d ranks\n", o.root, comm->size());
    return kExitUsage;
  }

  // Barrier moves no data: one row, whatever -b/-e say.
  const std::vector<size_t> sizes =
      std::string(spec->name) == "barrier" ? std::vector<size_t>{0} : size_sweep(o);
  Runner runner(*comm, o, *spec);
  Report report(o, *spec, comm->size());
  Progress progress(lead, sizes.size());
  if (lead) report.header();
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Row row = runner.run(sizes[i]);
    if (!lead) continue;
    progress.erase();
    report.row(row);
    progress.update(i + 1);
  }
  if (!lead) return 0;  // the wrong counts are global: rank 0 reports them and sets the status
  progress.erase();
  report.footer();
  if (json != nullptr) {
    const bool ok = report.write_json(json);
    if (std::fclose(json) != 0 || !ok) {
      std::fprintf(stderr, "hcomm-bench: -J: writing '%s' failed\n", o.json_path.c_str());
      return kExitWrong;
    }
  }
  return report.total_wrong() == 0 ? 0 : kExitWrong;
}
