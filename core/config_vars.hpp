// Every HCOMM_* environment variable hcomm reads, listed once: its name, kind, default, what it
// accepts, what it means and the Config field it sets. Pure data and the generic parse of each
// kind, so that every layer can read its own variable through the list: core/log.cpp reads
// HCOMM_DEBUG and HCOMM_DEBUG_SUBSYS, topology/ HCOMM_HOST_ID, bootstrap/ the launcher's
// HCOMM_RANK, HCOMM_WORLD_SIZE and HCOMM_ROOT_ADDR, and api/config.cpp maps the rest onto Config
// fields (Config::from_env()). `hcomm-info --config` prints the list; the README's configuration
// table is compared with it by the test config_table_readme.
//
// A variable set to the empty string counts as unset (it keeps its default), except where the
// entry says that "" is a value (HCOMM_TCP_CONGESTION: "" keeps the kernel's choice).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hcomm/status.hpp"

namespace hcomm::core {

/// One per variable, in the order of the list (which is the README's).
enum class Var : uint8_t {
  rank,
  world_size,
  root_addr,
  socket_ifname,
  transport,
  send_buf_size,
  recv_buf_size,
  sockets_per_peer,
  tcp_congestion,
  rdma_device,
  rdma_gid_index,
  num_qps,
  max_inline,
  rdma_timeout,
  rdma_retry_cnt,
  rdma_traffic_class,
  rdma_buffers,
  rdma_pin_budget_mb,
  chunk_size,
  algo,
  compression,
  comp_threshold,
  comp_error_feedback,
  topo_file,
  calibrate,
  connect_timeout_ms,
  timeout_ms,
  failover,
  fallback_ifname,
  keepalive_ms,
  keepalive_timeout_ms,
  phi_threshold,
  peer_timeout_ms,
  reconnect_min_ms,
  reconnect_max_ms,
  failback_ms,
  failover_limit,
  gray_window_ms,
  gray_goodput_pct,
  gray_loss_pct,
  gray_rtt_ms,
  gray_hold_ms,
  probe_bytes,
  probe_interval_ms,
  multipath,
  multipath_min_bytes,
  qos,
  link_gbps,
  fallback_link_gbps,
  actor_threads,
  spin_us,
  profile,
  profile_file,
  trace_buffer_size,
  dump_dir,
  dump_on_exit,
  stall_warn_ms,
  stats,
  job_key,
  job_key_file,
  require_auth,
  store_max_bytes,
  tls,
  tls_cert_file,
  tls_key_file,
  tls_ca_file,
  host_id,
  debug,
  debug_subsys,
  count,
};
inline constexpr size_t kNumVars = static_cast<size_t>(Var::count);

enum class VarKind : uint8_t {
  integer,      ///< a decimal whole number in [min, max]
  real,         ///< a decimal real number in [min, max]
  bytes,        ///< a byte count in [min, max]: digits, then optionally K, M or G (x1024 each)
  duration,     ///< whole milliseconds in [min, max]
  flag,         ///< 1 (on) or 0 (off)
  enumeration,  ///< one of `values`, in any case
  text,         ///< any text: a name or a path
  spec,         ///< a small grammar of its own ("R/T", "host:port", ...), parsed by its user
};

/// The names of the enumerations' values, in the order of the enum they stand for.
inline constexpr const char* kFailoverModes[] = {"auto", "on", "off"};   // hcomm::FailoverMode
inline constexpr const char* kMultipathModes[] = {"auto", "on", "off"};  // hcomm::MultipathMode
inline constexpr const char* kCompressionModes[] = {"none",  "fp16", "bf16",
                                                    "delta", "zstd", "auto"};  // hcomm::Compression
inline constexpr const char* kRdmaBufferModes[] = {"zero_copy", "dynamic",
                                                   "static"};  // hcomm::RdmaBufferMode
inline constexpr const char* kDebugLevels[] = {"OFF",  "ERROR", "WARN",
                                               "INFO", "DEBUG", "TRACE"};  // log::Level

/// Flags of a ConfigVar.
enum : uint8_t {
  kZeroToo = 1,       ///< 0 is accepted besides [min, max] ("chosen automatically")
  kEmptyIsValue = 2,  ///< set to "" is a value, not "unset"
  kNumbered = 4,      ///< an enumeration that also takes its values' positions (0, 1, ...)
  kSecret = 8,        ///< never printed (hcomm-info shows "(set, not shown)")
};

struct ConfigVar {
  Var id;
  const char* name;
  VarKind kind;
  /// The value in force when the variable is unset, as text that reads back as that value; ""
  /// when unset has a meaning of its own, which `meaning` states ("auto", "required", ...).
  const char* default_text;
  int64_t min;  ///< integer, real, bytes, duration: the accepted range, inclusive
  int64_t max;
  uint8_t flags;
  const char* const* values;  ///< enumeration: its values' names
  size_t num_values;
  /// What is accepted, in words, for kinds whose range says too little (bytes, real, spec, text);
  /// accepted_text() makes it for the others.
  const char* accepted;
  const char* meaning;  ///< one line
  const char* field;    ///< the Config field it sets, or "" when a lower layer reads it alone
};

/// Every variable, in the order of Var.
const std::array<ConfigVar, kNumVars>& config_vars();
const ConfigVar& config_var(Var var);
/// The entry named `name` ("HCOMM_NUM_QPS"), or nullptr.
const ConfigVar* find_config_var(std::string_view name);

/// What the variable accepts, in words: "an integer in [1, 16]", "auto, on or off", ...
std::string accepted_text(const ConfigVar& var);

/// The variable's text in the environment; nothing when it is unset, or set to "" where "" is not
/// a value (kEmptyIsValue).
std::optional<std::string> env_text(Var var);

// The parse of each kind (through core/parse.hpp). Errors are HCOMM_ERR_INVALID_ARG and name the
// variable, the text and what is accepted; a variable of another kind is HCOMM_ERR_INTERNAL.
Expected<int64_t> parse_integer_var(const ConfigVar& var, std::string_view text);  ///< or duration
Expected<uint64_t> parse_bytes_var(const ConfigVar& var, std::string_view text);
Expected<double> parse_real_var(const ConfigVar& var, std::string_view text);
Expected<bool> parse_flag_var(const ConfigVar& var, std::string_view text);
/// The position of the value in `var.values`.
Expected<size_t> parse_enum_var(const ConfigVar& var, std::string_view text);

/// `text`, the value of variable `name`, as a whole number in [min, max]: for the launcher's
/// variables that are not hcomm's (MASTER_PORT, SLURM_PROCID, ...) and the parts of a spec.
Expected<int64_t> parse_named_integer(std::string_view name, std::string_view text, int64_t min,
                                      int64_t max);

/// "NAME='text' is not accepted: expected <accepted_text(var)>", for the parsers of specs.
Status not_accepted(const ConfigVar& var, std::string_view text);

}  // namespace hcomm::core
