#include "core/config_vars.hpp"

#include <cctype>
#include <climits>
#include <cstdlib>
#include <iterator>

#include "core/parse.hpp"
#include "hcomm/config.hpp"

namespace hcomm::core {
namespace {

constexpr ConfigVar entry(Var id, const char* name, VarKind kind, const char* default_text,
                          int64_t min, int64_t max, uint8_t flags, const char* accepted,
                          const char* field, const char* meaning) {
  return ConfigVar{id,    name,    kind, default_text, min,     max,
                   flags, nullptr, 0,    accepted,     meaning, field};
}

constexpr ConfigVar integer(Var id, const char* name, const char* default_text, int64_t min,
                            int64_t max, const char* field, const char* meaning) {
  return entry(id, name, VarKind::integer, default_text, min, max, 0, "", field, meaning);
}

constexpr ConfigVar millis(Var id, const char* name, const char* default_text, const char* field,
                           const char* meaning) {
  return entry(id, name, VarKind::duration, default_text, 1, INT32_MAX, 0, "", field, meaning);
}

constexpr ConfigVar text(Var id, const char* name, const char* default_text, const char* accepted,
                         const char* field, const char* meaning, uint8_t flags = 0) {
  return entry(id, name, VarKind::text, default_text, 0, 0, flags, accepted, field, meaning);
}

constexpr ConfigVar spec(Var id, const char* name, const char* default_text, const char* accepted,
                         const char* field, const char* meaning) {
  return entry(id, name, VarKind::spec, default_text, 0, 0, 0, accepted, field, meaning);
}

template <size_t N>
constexpr ConfigVar enumeration(Var id, const char* name, const char* default_text,
                                const char* const (&values)[N], uint8_t flags, const char* field,
                                const char* meaning) {
  ConfigVar v =
      entry(id, name, VarKind::enumeration, default_text, 0, 0, flags, "", field, meaning);
  v.values = values;
  v.num_values = N;
  return v;
}

constexpr int64_t kMaxSockBuf = INT_MAX;  // setsockopt takes an int

// The order of Var; the README's table lists the same rows in the same order.
constexpr std::array<ConfigVar, kNumVars> kVars = {{
    // ---- launch and rendezvous (read by bootstrap/launch_env.cpp)
    integer(Var::rank, "HCOMM_RANK", "", 0, INT_MAX, "rank",
            "this process's rank; unset: RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID"),
    integer(Var::world_size, "HCOMM_WORLD_SIZE", "", 1, INT_MAX, "world_size",
            "the number of ranks; unset: WORLD_SIZE, OMPI_COMM_WORLD_SIZE or SLURM_NTASKS"),
    spec(Var::root_addr, "HCOMM_ROOT_ADDR", "127.0.0.1:29500",
         "host:port, host an IPv4 address or a host name", "root_addr",
         "rank 0's rendezvous store; unset: MASTER_ADDR:MASTER_PORT, else the default"),
    text(Var::socket_ifname, "HCOMM_SOCKET_IFNAME", "", "an interface name", "socket_ifname",
         "interface to listen on; unset: loopback for a loopback root, else the route to it"),
    // ---- transports
    spec(Var::transport, "HCOMM_TRANSPORT", "auto",
         "auto, shm, rdma, tcp or a protocol the application registered", "transport",
         "auto: per peer shm on this host, else rdma, else tcp; or one protocol for every peer"),
    entry(Var::send_buf_size, "HCOMM_SEND_BUF_SIZE", VarKind::bytes, "0", 0, kMaxSockBuf, 0,
          "0 (kernel default) or a size up to 2G-1", "send_buf_size",
          "SO_SNDBUF of hcomm's TCP sockets; 0: the kernel's"),
    entry(Var::recv_buf_size, "HCOMM_RECV_BUF_SIZE", VarKind::bytes, "0", 0, kMaxSockBuf, 0,
          "0 (kernel default) or a size up to 2G-1", "recv_buf_size",
          "SO_RCVBUF of hcomm's TCP sockets; 0: the kernel's"),
    integer(Var::sockets_per_peer, "HCOMM_SOCKETS_PER_PEER", "1", 1, 16, "sockets_per_peer",
            "TCP connections per peer; frames are striped over them"),
    text(Var::tcp_congestion, "HCOMM_TCP_CONGESTION", "cubic",
         "a congestion control the kernel has, or \"\"", "tcp_congestion",
         "TCP congestion control of hcomm's sockets; set to \"\": the kernel's", kEmptyIsValue),
    // ---- RDMA
    text(Var::rdma_device, "HCOMM_RDMA_DEVICE", "", "a device name", "rdma_device",
         "RDMA device; unset: the first with an active port and an IPv4 RoCEv2 GID"),
    integer(Var::rdma_gid_index, "HCOMM_RDMA_GID_INDEX", "-1", -1, 255, "rdma_gid_index",
            "GID to use; -1: the port's IPv4 RoCEv2 GID"),
    integer(Var::num_qps, "HCOMM_NUM_QPS", "1", 1, 16, "num_qps",
            "reliable-connected queue pairs per peer; messages are striped over them"),
    entry(Var::max_inline, "HCOMM_MAX_INLINE", VarKind::bytes, "256", 0, 4096, 0,
          "a size from 0 to 4096 bytes", "max_inline",
          "messages up to this size (headers included) go inline; capped by the device"),
    integer(Var::rdma_timeout, "HCOMM_RDMA_TIMEOUT", "14", 1, 31, "rdma_timeout",
            "local ACK timeout, 4.096 us x 2^n"),
    integer(Var::rdma_retry_cnt, "HCOMM_RDMA_RETRY_CNT", "6", 0, 6, "rdma_retry_cnt",
            "transport retries before a send fails; 7 (retry forever on some NICs) is refused"),
    integer(Var::rdma_traffic_class, "HCOMM_RDMA_TRAFFIC_CLASS", "0", 0, 255, "rdma_traffic_class",
            "IP traffic class (DSCP << 2 | ECN) of RoCE packets; 0: the QoS class's marking"),
    enumeration(Var::rdma_buffers, "HCOMM_RDMA_BUFFERS", "zero_copy", kRdmaBufferModes, 0,
                "rdma_buffers", "how payloads reach the NIC: sent in place, or copied"),
    integer(Var::rdma_pin_budget_mb, "HCOMM_RDMA_PIN_BUDGET_MB", "1024", 1, 1 << 24,
            "rdma_pin_budget", "MiB the registration cache may keep pinned per device"),
    // ---- algorithms
    entry(Var::chunk_size, "HCOMM_CHUNK_SIZE", VarKind::bytes, "0", 64, int64_t{1} << 30, kZeroToo,
          "0 (the cost model's choice) or a size from 64 bytes to 1G", "chunk_bytes",
          "pipelining chunk of collectives; 0: the cost model's choice per operation"),
    spec(Var::algo, "HCOMM_ALGO", "",
         "allreduce=ring;broadcast=tree, or one of ring, tree, rd, hd, direct, hier, auto", "algo",
         "force algorithms per operation; unset: the cost model chooses"),
    // ---- compression
    enumeration(
        Var::compression, "HCOMM_COMPRESSION", "none", kCompressionModes, 0, "compression",
        "payload codec: lossy fp16/bf16, lossless delta/zstd, auto (lossless where it pays)"),
    entry(Var::comp_threshold, "HCOMM_COMP_THRESHOLD", VarKind::bytes, "1024", 0, int64_t{1} << 30,
          0, "a size up to 1G", "comp_threshold", "frames smaller than this travel uncompressed"),
    entry(Var::comp_error_feedback, "HCOMM_COMP_ERROR_FEEDBACK", VarKind::flag, "0", 0, 1, 0, "",
          "comp_error_feedback",
          "fp16/bf16: carry each stream's rounding error into its next payload"),
    text(Var::topo_file, "HCOMM_TOPO_FILE", "", "a path", "topo_file",
         "file placing hosts under switches and racks; rings follow it"),
    entry(Var::calibrate, "HCOMM_CALIBRATE", VarKind::flag, "1", 0, 1, 0, "", "calibrate",
          "measure the links and the reduction at creation; 0: built-in figures"),
    // ---- deadlines
    millis(Var::connect_timeout_ms, "HCOMM_CONNECT_TIMEOUT_MS", "30000", "connect_timeout",
           "deadline for joining the rendezvous and connecting to every peer"),
    millis(Var::timeout_ms, "HCOMM_TIMEOUT_MS", "300000", "op_timeout",
           "how long the blocking forms of the operations wait"),
    // ---- failover
    enumeration(Var::failover, "HCOMM_FAILOVER", "auto", kFailoverModes, 0, "failover",
                "auto: RDMA and TCP peers get a TCP fallback link; on: shm too; off: none"),
    text(Var::fallback_ifname, "HCOMM_FALLBACK_IFNAME", "", "an interface name", "fallback_ifname",
         "interface of the fallback TCP links; unset: the listening interface"),
    millis(Var::keepalive_ms, "HCOMM_KEEPALIVE_MS", "200", "keepalive_interval",
           "a link that sent nothing for this long sends a heartbeat"),
    millis(Var::keepalive_timeout_ms, "HCOMM_KEEPALIVE_TIMEOUT_MS", "800", "keepalive_timeout",
           "a link with no frame for this long is dead; above HCOMM_KEEPALIVE_MS"),
    entry(Var::phi_threshold, "HCOMM_PHI_THRESHOLD", VarKind::real, "0", 0, 100, 0,
          "0 (off) or a suspicion level up to 100, e.g. 8", "phi_threshold",
          "also suspect a link once its phi-accrual level passes this; 0: off"),
    millis(Var::peer_timeout_ms, "HCOMM_PEER_TIMEOUT_MS", "5000", "peer_timeout",
           "a peer with every link down this long is lost; at least the keep-alive timeout"),
    millis(Var::reconnect_min_ms, "HCOMM_RECONNECT_MIN_MS", "100", "reconnect_min",
           "first backoff between reconnection attempts (doubling, with jitter)"),
    millis(Var::reconnect_max_ms, "HCOMM_RECONNECT_MAX_MS", "2000", "reconnect_max",
           "longest backoff between reconnection attempts; at least HCOMM_RECONNECT_MIN_MS"),
    millis(Var::failback_ms, "HCOMM_FAILBACK_MS", "600", "failback_after",
           "a primary passes the data-path probe this long before traffic moves back"),
    spec(Var::failover_limit, "HCOMM_FAILOVER_LIMIT", "5/30",
         "R/T, at most R failovers (1..1000) within T seconds (1..86400), e.g. 5/30",
         "failover_limit",
         "more than R failovers within T seconds keep the peer on its fallback for good"),
    millis(Var::gray_window_ms, "HCOMM_GRAY_WINDOW_MS", "300", "gray_window",
           "the window over which a link's goodput and loss are judged"),
    integer(Var::gray_goodput_pct, "HCOMM_GRAY_GOODPUT_PCT", "25", 0, 100, "gray_goodput_pct",
            "sick below this % of its healthy goodput with frames waiting; 0: off"),
    integer(Var::gray_loss_pct, "HCOMM_GRAY_LOSS_PCT", "10", 0, 100, "gray_loss_pct",
            "sick when the medium resends this % of its packets; 0: off"),
    entry(Var::gray_rtt_ms, "HCOMM_GRAY_RTT_MS", VarKind::duration, "100", 1, INT32_MAX, kZeroToo,
          "", "gray_rtt", "sick when 5 idle round trips in a row take longer; 0: off"),
    millis(Var::gray_hold_ms, "HCOMM_GRAY_HOLD_MS", "1000", "gray_hold",
           "no fail-back to a link this soon after its gray failure (doubling)"),
    entry(Var::probe_bytes, "HCOMM_PROBE_BYTES", VarKind::bytes, "1048576", 64 * 1024,
          int64_t{64} << 20, 0, "a size from 64K to 64M", "probe_bytes",
          "bytes a data-path probe round sends each way"),
    millis(Var::probe_interval_ms, "HCOMM_PROBE_INTERVAL_MS", "100", "probe_interval",
           "the pause between data-path probe rounds"),
    enumeration(Var::multipath, "HCOMM_MULTIPATH", "auto", kMultipathModes, 0, "multipath",
                "large frames on both links: auto (two HCOMM_SOCKET_IFNAME), on, off"),
    entry(Var::multipath_min_bytes, "HCOMM_MULTIPATH_MIN_BYTES", VarKind::bytes, "1048576", 4096,
          int64_t{1} << 30, 0, "a size from 4K to 1G", "multipath_min_bytes",
          "frames at least this large are split between the links"),
    // ---- QoS
    spec(Var::qos, "HCOMM_QOS", "", "min=M,max=X,priority=P (any subset), e.g. min=30,max=70",
         "qos", "this communicator's traffic class; unset: min=0,max=100,priority=0"),
    entry(Var::link_gbps, "HCOMM_LINK_GBPS", VarKind::real, "0", 0, 100000, 0,
          "0 (the interface's speed) or a link capacity in Gbit/s, e.g. 1 or 25", "link_gbps",
          "capacity of the link this host's communicators share; 0: the interface's speed"),
    entry(Var::fallback_link_gbps, "HCOMM_FALLBACK_LINK_GBPS", VarKind::real, "0", 0, 100000, 0,
          "0 (HCOMM_LINK_GBPS) or a link capacity in Gbit/s, e.g. 1 or 25", "fallback_link_gbps",
          "the same for traffic moved to a fallback link; 0: as HCOMM_LINK_GBPS"),
    // ---- runtime
    integer(Var::actor_threads, "HCOMM_ACTOR_THREADS", "2", 1, 64, "actor_threads",
            "CAF scheduler threads (control plane only)"),
    integer(Var::spin_us, "HCOMM_SPIN_US", "-1", -1, 10000000, "spin_us",
            "how long a waiting thread busy polls before it sleeps; -1: 500 us or 0, by cores"),
    // ---- observability (read by observe/)
    integer(Var::profile, "HCOMM_PROFILE", "0", 0, 2, "",
            "1: write a Chrome trace of every operation at exit; 2: also each transfer"),
    text(Var::profile_file, "HCOMM_PROFILE_FILE", "", "a path; %r is replaced by the rank", "",
         "the profile's file; unset: hcomm_profile.<rank>.json (hcomm_profile.json alone)"),
    integer(Var::trace_buffer_size, "HCOMM_TRACE_BUFFER_SIZE", "2000", 0, 1000000, "",
            "operations the flight recorder keeps per communicator; 0: none"),
    text(Var::dump_dir, "HCOMM_DUMP_DIR", "/tmp", "a directory", "",
         "where the flight recorder writes hcomm_trace.<rank>.<pid>.json"),
    entry(Var::dump_on_exit, "HCOMM_DUMP_ON_EXIT", VarKind::flag, "0", 0, 1, 0, "", "",
          "also dump the flight recorder when a communicator is destroyed"),
    entry(Var::stall_warn_ms, "HCOMM_STALL_WARN_MS", VarKind::duration, "10000", 0, INT32_MAX, 0,
          "", "", "an operation waiting this long is reported, by rank; 0: off"),
    entry(Var::stats, "HCOMM_STATS", VarKind::flag, "1", 0, 1, 0, "", "",
          "publish live counters for hcomm-perf-mon in /dev/shm/hcomm-stats.<pid>"),
    // ---- security (read by core/job_key.cpp and bootstrap/)
    text(Var::job_key, "HCOMM_JOB_KEY", "", "a secret of 16 or more bytes", "",
         "the job's secret: every connection proves it holds it; unset: unauthenticated", kSecret),
    text(Var::job_key_file, "HCOMM_JOB_KEY_FILE", "", "a readable file", "",
         "a file holding the job's secret (instead of HCOMM_JOB_KEY)"),
    entry(Var::require_auth, "HCOMM_REQUIRE_AUTH", VarKind::flag, "0", 0, 1, 0, "", "",
          "1: refuse to run without a job key"),
    entry(Var::store_max_bytes, "HCOMM_STORE_MAX_BYTES", VarKind::bytes, "64M", 1 << 20,
          int64_t{1} << 40, 0, "a size of 1M or more", "",
          "what rank 0's rendezvous store holds at most, keys and values together"),
    entry(Var::tls, "HCOMM_TLS", VarKind::flag, "0", 0, 1, 0, "", "",
          "1: encrypt TCP links with TLS 1.3 (keys from the job key, or certificates)"),
    text(Var::tls_cert_file, "HCOMM_TLS_CERT_FILE", "", "a PEM file", "",
         "with HCOMM_TLS=1: this rank's certificate chain; unset: a key derived from the job key"),
    text(Var::tls_key_file, "HCOMM_TLS_KEY_FILE", "", "a PEM file", "",
         "the private key of HCOMM_TLS_CERT_FILE"),
    text(Var::tls_ca_file, "HCOMM_TLS_CA_FILE", "", "a PEM file", "",
         "the CA every peer's certificate must chain to (HCOMM_TLS_CERT_FILE's mode)"),
    // ---- read below api
    text(Var::host_id, "HCOMM_HOST_ID", "", "any text", "",
         "this rank's host identity; unset: boot id and namespaces (topology/host_identity)"),
    enumeration(Var::debug, "HCOMM_DEBUG", "WARN", kDebugLevels, kNumbered, "",
                "log level (or 0-5); lines go to stderr"),
    spec(Var::debug_subsys, "HCOMM_DEBUG_SUBSYS", "ALL",
         "a comma list of INIT, BOOT, NET, COLL, ACTOR, ALL", "",
         "the subsystems that log; ALL: every one"),
}};

constexpr bool in_order() {
  for (size_t i = 0; i < kNumVars; ++i)
    if (static_cast<size_t>(kVars[i].id) != i) return false;
  return true;
}
static_assert(in_order(), "kVars must list the variables in the order of Var");

constexpr bool same(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}
static_assert(same(kFailoverModes[static_cast<int>(FailoverMode::automatic)], "auto") &&
                  same(kFailoverModes[static_cast<int>(FailoverMode::on)], "on") &&
                  same(kFailoverModes[static_cast<int>(FailoverMode::off)], "off"),
              "kFailoverModes must name FailoverMode's values in its order");
static_assert(same(kMultipathModes[static_cast<int>(MultipathMode::automatic)], "auto") &&
                  same(kMultipathModes[static_cast<int>(MultipathMode::on)], "on") &&
                  same(kMultipathModes[static_cast<int>(MultipathMode::off)], "off"),
              "kMultipathModes must name MultipathMode's values in its order");
static_assert(same(kCompressionModes[static_cast<int>(Compression::none)], "none") &&
                  same(kCompressionModes[static_cast<int>(Compression::fp16)], "fp16") &&
                  same(kCompressionModes[static_cast<int>(Compression::bf16)], "bf16") &&
                  same(kCompressionModes[static_cast<int>(Compression::delta)], "delta") &&
                  same(kCompressionModes[static_cast<int>(Compression::zstd)], "zstd") &&
                  same(kCompressionModes[static_cast<int>(Compression::automatic)], "auto"),
              "kCompressionModes must name Compression's values in its order");
static_assert(same(kRdmaBufferModes[static_cast<int>(RdmaBufferMode::zero_copy)], "zero_copy") &&
                  same(kRdmaBufferModes[static_cast<int>(RdmaBufferMode::dynamic)], "dynamic") &&
                  same(kRdmaBufferModes[static_cast<int>(RdmaBufferMode::fixed)], "static"),
              "kRdmaBufferModes must name RdmaBufferMode's values in its order");

Status invalid(std::string message) {
  return Status(HCOMM_ERR_INVALID_ARG, std::move(message));
}

Status wrong_kind(const ConfigVar& var, const char* kind) {
  return Status(HCOMM_ERR_INTERNAL, std::string(var.name) + " is not read as " + kind);
}

std::string quoted(const ConfigVar& var, std::string_view text) {
  return std::string(var.name) + "='" + std::string(text) + "'";
}

}  // namespace

const std::array<ConfigVar, kNumVars>& config_vars() {
  return kVars;
}

const ConfigVar& config_var(Var var) {
  return kVars[static_cast<size_t>(var)];
}

const ConfigVar* find_config_var(std::string_view name) {
  for (const ConfigVar& v : kVars)
    if (name == v.name) return &v;
  return nullptr;
}

std::string accepted_text(const ConfigVar& var) {
  const std::string range = "[" + std::to_string(var.min) + ", " + std::to_string(var.max) + "]";
  switch (var.kind) {
    case VarKind::integer:
      return "an integer in " + range;
    case VarKind::duration:
      return "an integer in " + range + " milliseconds";
    case VarKind::flag:
      return "1 (on) or 0 (off)";
    case VarKind::enumeration: {
      std::string out;
      for (size_t i = 0; i < var.num_values; ++i)
        out += (i == 0 ? "" : i + 1 == var.num_values ? " or " : ", ") + std::string(var.values[i]);
      if ((var.flags & kNumbered) != 0)
        out += " (or 0.." + std::to_string(var.num_values - 1) + ")";
      return out;
    }
    default:
      return var.accepted;
  }
}

std::optional<std::string> env_text(Var var) {
  const ConfigVar& v = config_var(var);
  const char* value = std::getenv(v.name);
  if (value == nullptr) return std::nullopt;
  if (*value == '\0' && (v.flags & kEmptyIsValue) == 0) return std::nullopt;
  return std::string(value);
}

Expected<int64_t> parse_named_integer(std::string_view name, std::string_view text, int64_t min,
                                      int64_t max) {
  const auto n = parse_integer(text);
  if (n && *n >= min && *n <= max) return *n;
  // Digits alone (after a sign) that did not fit are out of range too.
  std::string_view digits = trim(text);
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.remove_prefix(1);
  bool all_digits = !digits.empty();
  for (char c : digits) all_digits &= std::isdigit(static_cast<unsigned char>(c)) != 0;
  return invalid(std::string(name) + "='" + std::string(text) + "' " +
                 (n || all_digits ? "is out of range" : "is not a number") +
                 ": expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                 "]");
}

Expected<int64_t> parse_integer_var(const ConfigVar& var, std::string_view text) {
  if (var.kind != VarKind::integer && var.kind != VarKind::duration)
    return wrong_kind(var, "an integer");
  auto n = parse_named_integer(var.name, text, var.min, var.max);
  if (!n && var.kind == VarKind::duration)
    return Status(n.status().code(), n.status().message() + " milliseconds");
  return n;
}

Expected<uint64_t> parse_bytes_var(const ConfigVar& var, std::string_view text) {
  if (var.kind != VarKind::bytes) return wrong_kind(var, "a byte count");
  const auto n = parse_bytes(text);
  const bool zero = (var.flags & kZeroToo) != 0 && n && *n == 0;
  if (n && (zero || (*n >= static_cast<uint64_t>(var.min) && *n <= static_cast<uint64_t>(var.max))))
    return *n;
  return invalid(quoted(var, text) + " is not accepted: expected " + var.accepted +
                 " (a byte count with an optional K, M or G suffix, e.g. 65536 or 4M)");
}

Expected<double> parse_real_var(const ConfigVar& var, std::string_view text) {
  if (var.kind != VarKind::real) return wrong_kind(var, "a real number");
  const auto d = parse_real(text);
  const bool zero = (var.flags & kZeroToo) != 0 && d && *d == 0;
  if (d && (zero || (*d >= static_cast<double>(var.min) && *d <= static_cast<double>(var.max))))
    return *d;
  return invalid(quoted(var, text) + " is not accepted: expected " + var.accepted);
}

Expected<bool> parse_flag_var(const ConfigVar& var, std::string_view text) {
  if (var.kind != VarKind::flag) return wrong_kind(var, "a flag");
  const auto n = parse_integer(text);
  if (n && (*n == 0 || *n == 1)) return *n == 1;
  return not_accepted(var, text);
}

Expected<size_t> parse_enum_var(const ConfigVar& var, std::string_view text) {
  if (var.kind != VarKind::enumeration) return wrong_kind(var, "one of a set of names");
  const std::string_view t = trim(text);
  for (size_t i = 0; i < var.num_values; ++i)
    if (equals_ignoring_case(t, var.values[i])) return i;
  if ((var.flags & kNumbered) != 0) {
    const auto n = parse_integer(t);
    if (n && *n >= 0 && static_cast<size_t>(*n) < var.num_values) return static_cast<size_t>(*n);
  }
  return not_accepted(var, text);
}

Status not_accepted(const ConfigVar& var, std::string_view text) {
  return invalid(quoted(var, text) + " is not accepted: expected " + accepted_text(var));
}

}  // namespace hcomm::core

namespace hcomm {

const char* to_string(FailoverMode mode) {
  const auto i = static_cast<size_t>(mode);
  return i < std::size(core::kFailoverModes) ? core::kFailoverModes[i] : "?";
}

const char* to_string(MultipathMode mode) {
  const auto i = static_cast<size_t>(mode);
  return i < std::size(core::kMultipathModes) ? core::kMultipathModes[i] : "?";
}

const char* to_string(Compression mode) {
  const auto i = static_cast<size_t>(mode);
  return i < std::size(core::kCompressionModes) ? core::kCompressionModes[i] : "?";
}

bool parse_compression(const char* text, Compression* out) {
  if (text == nullptr || out == nullptr) return false;
  for (size_t i = 0; i < std::size(core::kCompressionModes); ++i) {
    if (std::string_view(text) == core::kCompressionModes[i]) {
      *out = static_cast<Compression>(i);
      return true;
    }
  }
  return false;
}

const char* to_string(RdmaBufferMode mode) {
  const auto i = static_cast<size_t>(mode);
  return i < std::size(core::kRdmaBufferModes) ? core::kRdmaBufferModes[i] : "?";
}

}  // namespace hcomm
