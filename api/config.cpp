#include "hcomm/config.hpp"

#include "hcomm/protocol.hpp"

#include <cctype>
#include <climits>
#include <cstdint>
#include <cstdlib>

#include "bootstrap/launch_env.hpp"
#include "collectives/algorithm_choice.hpp"

namespace hcomm {
namespace {

/// The value of `name`; empty when unset or set to "" (both mean "keep the default").
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

Status invalid(std::string message) {
  return Status(HCOMM_ERR_INVALID_ARG, std::move(message));
}

/// Parses a byte count: digits, then optionally K, M or G (powers of 1024, either case), then
/// optionally "B" or "iB": "4096", "64K", "4M", "1GiB". The result must be in [min, max].
Expected<size_t> parse_bytes(const char* name, const std::string& value, uint64_t min, uint64_t max,
                             const char* accepted) {
  auto fail = [&]() {
    return invalid(std::string(name) + "='" + value + "' is not accepted: expected " + accepted +
                   " (a byte count with an optional K, M or G suffix, e.g. 65536 or 4M)");
  };
  size_t b = 0;
  size_t e = value.size();
  while (b < e && std::isspace(static_cast<unsigned char>(value[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(value[e - 1]))) --e;
  size_t i = b;
  uint64_t n = 0;
  for (; i < e && std::isdigit(static_cast<unsigned char>(value[i])); ++i) {
    if (n > (UINT64_MAX - 9) / 10) return fail();
    n = n * 10 + static_cast<uint64_t>(value[i] - '0');
  }
  if (i == b) return fail();
  std::string suffix = value.substr(i, e - i);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      default:
        break;
    }
    std::string rest = shift == 0 ? suffix : suffix.substr(1);
    if (!(rest.empty() || rest == "B" || (shift != 0 && rest == "IB"))) return fail();
  }
  if (shift != 0 && n > (UINT64_MAX >> shift)) return fail();
  n <<= shift;
  if (n < min || n > max) return fail();
  return static_cast<size_t>(n);
}

Status apply_size(const char* name, uint64_t min, uint64_t max, const char* accepted,
                  size_t* field) {
  std::string v = env(name);
  if (v.empty()) return Status();
  auto r = parse_bytes(name, v, min, max, accepted);
  if (!r) return r.status();
  *field = *r;
  return Status();
}

Status apply_int(const char* name, int64_t min, int64_t max, int* field) {
  std::string v = env(name);
  if (v.empty()) return Status();
  auto r = bootstrap::parse_env_int(name, v, min, max);
  if (!r) return r.status();
  *field = static_cast<int>(*r);
  return Status();
}

Status apply_ms(const char* name, std::chrono::milliseconds* field) {
  std::string v = env(name);
  if (v.empty()) return Status();
  auto r = bootstrap::parse_env_int(name, v, 1, INT32_MAX);
  if (!r) return Status(r.status().code(), r.status().message() + " milliseconds");
  *field = std::chrono::milliseconds(*r);
  return Status();
}

Status apply_transport(std::string* field) {
  std::string v = env("HCOMM_TRANSPORT");
  if (v.empty()) return Status();
  std::string lower = v;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string list = "auto";
  for (const auto& name : registered_protocols()) {
    if (lower == name || v == name) {
      *field = lower == name ? lower : v;
      return Status();
    }
    list += ", " + name;
  }
  if (lower == "auto") {
    *field = lower;
    return Status();
  }
  return invalid("HCOMM_TRANSPORT='" + v + "' is not a transport: expected one of " + list);
}

Status apply_retry_cnt(int* field) {
  std::string v = env("HCOMM_RDMA_RETRY_CNT");
  if (v.empty()) return Status();
  auto r = bootstrap::parse_env_int("HCOMM_RDMA_RETRY_CNT", v, 0, 7);
  if (!r) return r.status();
  if (*r == 7)
    return invalid(
        "HCOMM_RDMA_RETRY_CNT=7 means \"retry forever\" on rdma_rxe and some NICs, so a dead "
        "path would never be reported: use 0..6 (6 is the default)");
  *field = static_cast<int>(*r);
  return Status();
}

Status apply_rdma_buffers(std::string* field) {
  std::string v = env("HCOMM_RDMA_BUFFERS");
  if (v.empty()) return Status();
  if (v != "zero_copy" && v != "dynamic" && v != "static")
    return invalid("HCOMM_RDMA_BUFFERS='" + v +
                   "' is not a buffer mode: expected zero_copy, dynamic or static");
  *field = v;
  return Status();
}

Status apply_pin_budget(size_t* field) {
  std::string v = env("HCOMM_RDMA_PIN_BUDGET_MB");
  if (v.empty()) return Status();
  auto r = bootstrap::parse_env_int("HCOMM_RDMA_PIN_BUDGET_MB", v, 1, 1 << 24);
  if (!r) return r.status();
  *field = static_cast<size_t>(*r) << 20;
  return Status();
}

Status apply_flag(const char* name, bool* field) {
  int v = *field ? 1 : 0;
  Status st = apply_int(name, 0, 1, &v);
  *field = v != 0;
  return st;
}

Status apply_algo(std::string* field) {
  std::string v = env("HCOMM_ALGO");
  if (v.empty()) return Status();
  auto parsed = collectives::AlgorithmChoice::parse(v);
  if (!parsed) return parsed.status();
  *field = v;
  return Status();
}

Status apply_failover(std::string* field) {
  std::string v = env("HCOMM_FAILOVER");
  if (v.empty()) return Status();
  if (v != "auto" && v != "on" && v != "off")
    return invalid("HCOMM_FAILOVER='" + v + "' is not accepted: expected auto, on or off");
  *field = v;
  return Status();
}

/// HCOMM_FAILOVER_LIMIT="R/T": R failovers within T seconds.
Status apply_failover_limit(int* limit, std::chrono::milliseconds* window) {
  std::string v = env("HCOMM_FAILOVER_LIMIT");
  if (v.empty()) return Status();
  const size_t slash = v.find('/');
  auto bad = [&] {
    return invalid("HCOMM_FAILOVER_LIMIT='" + v +
                   "' is not accepted: expected R/T, at most R failovers (1..1000) within T "
                   "seconds (1..86400), e.g. 5/30");
  };
  if (slash == std::string::npos) return bad();
  auto r = bootstrap::parse_env_int("HCOMM_FAILOVER_LIMIT", v.substr(0, slash), 1, 1000);
  auto t = bootstrap::parse_env_int("HCOMM_FAILOVER_LIMIT", v.substr(slash + 1), 1, 86400);
  if (!r || !t) return bad();
  *limit = static_cast<int>(*r);
  *window = std::chrono::seconds(*t);
  return Status();
}

Status apply_qos(QosClass* field) {
  std::string v = env("HCOMM_QOS");
  if (v.empty()) return Status();
  auto q = QosClass::parse(v);
  if (!q) return Status(q.status().code(), "HCOMM_QOS: " + q.status().message());
  *field = *q;
  return Status();
}

/// A real number in (0, max], or in [0, max] when `zero_ok`; `expected` says what in errors.
Status apply_real(const char* name, bool zero_ok, double max, const char* expected, double* field) {
  std::string v = env(name);
  if (v.empty()) return Status();
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !((zero_ok ? d >= 0 : d > 0) && d <= max))
    return invalid(std::string(name) + "='" + v + "' is not accepted: expected " + expected);
  *field = d;
  return Status();
}

}  // namespace

Expected<Config> Config::from_env() {
  Config c;
  auto launch = bootstrap::read_launch_env();
  if (!launch) return launch.status();
  c.rank = launch->rank;
  c.world_size = launch->world_size;
  if (!launch->root_addr.empty()) c.root_addr = launch->root_addr;

  c.socket_ifname = env("HCOMM_SOCKET_IFNAME");
  c.rdma_device = env("HCOMM_RDMA_DEVICE");
  c.topo_file = env("HCOMM_TOPO_FILE");
  c.fallback_ifname = env("HCOMM_FALLBACK_IFNAME");
  if (const char* cc = std::getenv("HCOMM_TCP_CONGESTION")) c.tcp_congestion = cc;
  constexpr uint64_t kMaxSockBuf = INT_MAX;  // setsockopt takes an int
  constexpr uint64_t kMaxChunk = uint64_t{1} << 30;
  Status checks[] = {
      apply_transport(&c.transport),
      apply_size("HCOMM_SEND_BUF_SIZE", 0, kMaxSockBuf, "0 (kernel default) or a size up to 2G-1",
                 &c.send_buf_size),
      apply_size("HCOMM_RECV_BUF_SIZE", 0, kMaxSockBuf, "0 (kernel default) or a size up to 2G-1",
                 &c.recv_buf_size),
      apply_int("HCOMM_SOCKETS_PER_PEER", 1, 16, &c.sockets_per_peer),
      apply_int("HCOMM_RDMA_GID_INDEX", -1, 255, &c.rdma_gid_index),
      apply_int("HCOMM_NUM_QPS", 1, 16, &c.num_qps),
      apply_size("HCOMM_MAX_INLINE", 0, 4096, "a size from 0 to 4096 bytes", &c.max_inline),
      apply_int("HCOMM_RDMA_TIMEOUT", 1, 31, &c.rdma_timeout),
      apply_retry_cnt(&c.rdma_retry_cnt),
      apply_int("HCOMM_RDMA_TRAFFIC_CLASS", 0, 255, &c.rdma_traffic_class),
      apply_rdma_buffers(&c.rdma_buffers),
      apply_pin_budget(&c.rdma_pin_budget),
      apply_size("HCOMM_CHUNK_SIZE", 64, kMaxChunk, "a size from 64 bytes to 1G", &c.chunk_bytes),
      apply_ms("HCOMM_CONNECT_TIMEOUT_MS", &c.connect_timeout),
      apply_ms("HCOMM_TIMEOUT_MS", &c.op_timeout),
      apply_int("HCOMM_ACTOR_THREADS", 1, 64, &c.actor_threads),
      apply_int("HCOMM_SPIN_US", -1, 10000000, &c.spin_us),
      apply_algo(&c.algo),
      apply_flag("HCOMM_CALIBRATE", &c.calibrate),
      apply_failover(&c.failover),
      apply_ms("HCOMM_KEEPALIVE_MS", &c.keepalive_interval),
      apply_ms("HCOMM_KEEPALIVE_TIMEOUT_MS", &c.keepalive_timeout),
      apply_real("HCOMM_PHI_THRESHOLD", true, 100, "0 (off) or a suspicion level up to 100, e.g. 8",
                 &c.phi_threshold),
      apply_ms("HCOMM_PEER_TIMEOUT_MS", &c.peer_timeout),
      apply_ms("HCOMM_RECONNECT_MIN_MS", &c.reconnect_min),
      apply_ms("HCOMM_RECONNECT_MAX_MS", &c.reconnect_max),
      apply_ms("HCOMM_FAILBACK_MS", &c.failback_after),
      apply_failover_limit(&c.failover_limit, &c.failover_window),
      apply_qos(&c.qos),
      apply_real("HCOMM_LINK_GBPS", false, 100000, "a link capacity in Gbit/s, e.g. 1 or 25",
                 &c.link_gbps),
      apply_real("HCOMM_FALLBACK_LINK_GBPS", false, 100000,
                 "a link capacity in Gbit/s, e.g. 1 or 25", &c.fallback_link_gbps),
  };
  for (const Status& st : checks) {
    if (!st.ok()) return st;
  }
  if (c.keepalive_timeout <= c.keepalive_interval)
    return invalid("HCOMM_KEEPALIVE_TIMEOUT_MS (" + std::to_string(c.keepalive_timeout.count()) +
                   ") must exceed HCOMM_KEEPALIVE_MS (" +
                   std::to_string(c.keepalive_interval.count()) +
                   "): a link would be declared dead between two heartbeats");
  if (c.peer_timeout < c.keepalive_timeout)
    return invalid("HCOMM_PEER_TIMEOUT_MS (" + std::to_string(c.peer_timeout.count()) +
                   ") must be at least HCOMM_KEEPALIVE_TIMEOUT_MS (" +
                   std::to_string(c.keepalive_timeout.count()) + ")");
  if (c.reconnect_max < c.reconnect_min)
    return invalid("HCOMM_RECONNECT_MAX_MS must be at least HCOMM_RECONNECT_MIN_MS");
  return c;
}

}  // namespace hcomm
