#include "hcomm/config.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "api/config_env.hpp"
#include "bootstrap/launch_env.hpp"
#include "collectives/algorithm_choice.hpp"
#include "core/log.hpp"
#include "core/parse.hpp"
#include "hcomm/protocol.hpp"

namespace hcomm {
namespace {

using core::ConfigVar;
using core::Var;

Status invalid(std::string message) {
  return Status(HCOMM_ERR_INVALID_ARG, std::move(message));
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

/// `d` as text that reads back as `d`: whole numbers without an exponent, others as the shortest
/// "%g" that does.
std::string real_text(double d) {
  char buf[32];
  if (d == std::floor(d) && std::fabs(d) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", d);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

template <auto Field>
using FieldType = std::remove_reference_t<decltype(std::declval<Config&>().*Field)>;

/// One field, read by the parse of its type: int an integer, size_t a byte count, milliseconds a
/// duration, double a real, bool a flag, an enum one of the table's names, a string as it is.
template <auto Field>
Status set_field(const ConfigVar& v, std::string_view text, Config* c) {
  using T = FieldType<Field>;
  if constexpr (std::is_same_v<T, std::string>) {
    c->*Field = std::string(text);
    return Status();
  } else {
    auto parsed = [&] {
      if constexpr (std::is_same_v<T, int> || std::is_same_v<T, std::chrono::milliseconds>)
        return core::parse_integer_var(v, text);
      else if constexpr (std::is_same_v<T, size_t>)
        return core::parse_bytes_var(v, text);
      else if constexpr (std::is_same_v<T, double>)
        return core::parse_real_var(v, text);
      else if constexpr (std::is_same_v<T, bool>)
        return core::parse_flag_var(v, text);
      else
        return core::parse_enum_var(v, text);
    }();
    if (!parsed) return parsed.status();
    if constexpr (std::is_same_v<T, std::chrono::milliseconds>)
      c->*Field = std::chrono::milliseconds(*parsed);
    else
      c->*Field = static_cast<T>(*parsed);
    return Status();
  }
}

template <auto Field>
std::string show_field(const Config& c) {
  using T = FieldType<Field>;
  const T& value = c.*Field;
  if constexpr (std::is_same_v<T, std::string>)
    return value;
  else if constexpr (std::is_same_v<T, std::chrono::milliseconds>)
    return std::to_string(value.count());
  else if constexpr (std::is_same_v<T, double>)
    return real_text(value);
  else if constexpr (std::is_same_v<T, bool>)
    return value ? "1" : "0";
  else if constexpr (std::is_enum_v<T>)
    return to_string(value);
  else
    return std::to_string(value);
}

/// A rank or a size: -1 (not set) shows as unset.
template <auto Field>
std::string show_launch(const Config& c) {
  return c.*Field < 0 ? std::string() : std::to_string(c.*Field);
}

Status set_root_addr(const ConfigVar& v, std::string_view text, Config* c) {
  const std::string root = trimmed(text);
  auto hp = bootstrap::parse_host_port(root);
  if (!hp) return invalid(std::string(v.name) + "='" + root + "': " + hp.status().message());
  c->root_addr = root;
  return Status();
}

/// "auto" or a registered protocol, in any case (a registered name that is not lower case too).
Status set_transport(const ConfigVar& v, std::string_view text, Config* c) {
  const std::string value(text);
  std::string lower = value;
  for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  std::string list = Config::kAutoTransport;
  for (const auto& name : registered_protocols()) {
    if (lower == name || value == name) {
      c->transport = lower == name ? lower : value;
      return Status();
    }
    list += ", " + name;
  }
  if (lower == Config::kAutoTransport) {
    c->transport = lower;
    return Status();
  }
  return invalid(std::string(v.name) + "='" + value + "' is not a transport: expected one of " +
                 list);
}

Status set_retry_cnt(const ConfigVar& v, std::string_view text, Config* c) {
  auto r = core::parse_integer_var(v, text);
  if (!r) {
    auto seven = core::parse_named_integer(v.name, text, 7, 7);
    if (seven)
      return invalid(std::string(v.name) +
                     "=7 means \"retry forever\" on rdma_rxe and some NICs, so a dead path "
                     "would never be reported: use 0..6 (6 is the default)");
    return r.status();
  }
  c->rdma_retry_cnt = static_cast<int>(*r);
  return Status();
}

Status set_pin_budget(const ConfigVar& v, std::string_view text, Config* c) {
  auto r = core::parse_integer_var(v, text);
  if (!r) return r.status();
  c->rdma_pin_budget = static_cast<size_t>(*r) << 20;
  return Status();
}

std::string show_pin_budget(const Config& c) {
  return std::to_string(c.rdma_pin_budget >> 20);
}

Status set_algo(const ConfigVar&, std::string_view text, Config* c) {
  const std::string value(text);
  auto parsed = collectives::AlgorithmChoice::parse(value);
  if (!parsed) return parsed.status();
  c->algo = value;
  return Status();
}

/// "R/T": R failovers within T seconds.
Status set_failover_limit(const ConfigVar& v, std::string_view text, Config* c) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return core::not_accepted(v, text);
  auto r = core::parse_named_integer(v.name, text.substr(0, slash), 1, 1000);
  auto t = core::parse_named_integer(v.name, text.substr(slash + 1), 1, 86400);
  if (!r || !t) return core::not_accepted(v, text);
  c->failover_limit = static_cast<int>(*r);
  c->failover_window = std::chrono::seconds(*t);
  return Status();
}

std::string show_failover_limit(const Config& c) {
  return std::to_string(c.failover_limit) + "/" +
         std::to_string(
             std::chrono::duration_cast<std::chrono::seconds>(c.failover_window).count());
}

Status set_qos(const ConfigVar& v, std::string_view text, Config* c) {
  auto q = QosClass::parse(std::string(text));
  if (!q)
    return Status(q.status().code(),
                  std::string(v.name) + "='" + std::string(text) + "': " + q.status().message());
  c->qos = *q;
  return Status();
}

std::string show_qos(const Config& c) {
  const QosClass& q = c.qos;
  if (q.is_default()) return "";
  return "min=" + std::to_string(q.min_rate) + ",max=" + std::to_string(q.max_rate) +
         ",priority=" + std::to_string(q.priority);
}

// Variables no Config field holds: read by their own layer, checked here.
Status check_text(const ConfigVar&, std::string_view, Config*) {
  return Status();
}

Status check_enum(const ConfigVar& v, std::string_view text, Config*) {
  auto r = core::parse_enum_var(v, text);
  return r ? Status() : r.status();
}

Status check_integer(const ConfigVar& v, std::string_view text, Config*) {
  auto r = core::parse_integer_var(v, text);
  return r ? Status() : r.status();
}

Status check_bytes(const ConfigVar& v, std::string_view text, Config*) {
  auto r = core::parse_bytes_var(v, text);
  return r ? Status() : r.status();
}

Status check_flag(const ConfigVar& v, std::string_view text, Config*) {
  auto r = core::parse_flag_var(v, text);
  return r ? Status() : r.status();
}

Status check_subsystems(const ConfigVar& v, std::string_view text, Config*) {
  return core::log::parse_subsystems(text) ? Status() : core::not_accepted(v, text);
}

struct Binding {
  Var var;
  const char* field;  ///< "" when no field holds the variable
  Status (*apply)(const ConfigVar&, std::string_view, Config*);
  std::string (*show)(const Config&);  ///< nullptr when no field holds the variable
};

#define HCOMM_FIELD(var, f) \
  { Var::var, #f, &set_field<&Config::f>, &show_field<&Config::f> }

// In the order of core::Var.
const Binding kBindings[] = {
    {Var::rank, "rank", &set_field<&Config::rank>, &show_launch<&Config::rank>},
    {Var::world_size, "world_size", &set_field<&Config::world_size>,
     &show_launch<&Config::world_size>},
    {Var::root_addr, "root_addr", &set_root_addr, &show_field<&Config::root_addr>},
    HCOMM_FIELD(socket_ifname, socket_ifname),
    {Var::transport, "transport", &set_transport, &show_field<&Config::transport>},
    HCOMM_FIELD(send_buf_size, send_buf_size),
    HCOMM_FIELD(recv_buf_size, recv_buf_size),
    HCOMM_FIELD(sockets_per_peer, sockets_per_peer),
    HCOMM_FIELD(tcp_congestion, tcp_congestion),
    HCOMM_FIELD(rdma_device, rdma_device),
    HCOMM_FIELD(rdma_gid_index, rdma_gid_index),
    HCOMM_FIELD(num_qps, num_qps),
    HCOMM_FIELD(max_inline, max_inline),
    HCOMM_FIELD(rdma_timeout, rdma_timeout),
    {Var::rdma_retry_cnt, "rdma_retry_cnt", &set_retry_cnt, &show_field<&Config::rdma_retry_cnt>},
    HCOMM_FIELD(rdma_traffic_class, rdma_traffic_class),
    HCOMM_FIELD(rdma_buffers, rdma_buffers),
    {Var::rdma_pin_budget_mb, "rdma_pin_budget", &set_pin_budget, &show_pin_budget},
    HCOMM_FIELD(chunk_size, chunk_bytes),
    {Var::algo, "algo", &set_algo, &show_field<&Config::algo>},
    HCOMM_FIELD(compression, compression),
    HCOMM_FIELD(comp_threshold, comp_threshold),
    HCOMM_FIELD(comp_error_feedback, comp_error_feedback),
    HCOMM_FIELD(topo_file, topo_file),
    HCOMM_FIELD(calibrate, calibrate),
    HCOMM_FIELD(connect_timeout_ms, connect_timeout),
    HCOMM_FIELD(timeout_ms, op_timeout),
    HCOMM_FIELD(failover, failover),
    HCOMM_FIELD(fallback_ifname, fallback_ifname),
    HCOMM_FIELD(keepalive_ms, keepalive_interval),
    HCOMM_FIELD(keepalive_timeout_ms, keepalive_timeout),
    HCOMM_FIELD(phi_threshold, phi_threshold),
    HCOMM_FIELD(peer_timeout_ms, peer_timeout),
    HCOMM_FIELD(reconnect_min_ms, reconnect_min),
    HCOMM_FIELD(reconnect_max_ms, reconnect_max),
    HCOMM_FIELD(failback_ms, failback_after),
    {Var::failover_limit, "failover_limit", &set_failover_limit, &show_failover_limit},
    HCOMM_FIELD(gray_window_ms, gray_window),
    HCOMM_FIELD(gray_goodput_pct, gray_goodput_pct),
    HCOMM_FIELD(gray_loss_pct, gray_loss_pct),
    HCOMM_FIELD(gray_rtt_ms, gray_rtt),
    HCOMM_FIELD(gray_hold_ms, gray_hold),
    HCOMM_FIELD(probe_bytes, probe_bytes),
    HCOMM_FIELD(probe_interval_ms, probe_interval),
    HCOMM_FIELD(multipath, multipath),
    HCOMM_FIELD(multipath_min_bytes, multipath_min_bytes),
    {Var::qos, "qos", &set_qos, &show_qos},
    HCOMM_FIELD(link_gbps, link_gbps),
    HCOMM_FIELD(fallback_link_gbps, fallback_link_gbps),
    HCOMM_FIELD(actor_threads, actor_threads),
    HCOMM_FIELD(spin_us, spin_us),
    {Var::profile, "", &check_integer, nullptr},
    {Var::profile_file, "", &check_text, nullptr},
    {Var::trace_buffer_size, "", &check_integer, nullptr},
    {Var::dump_dir, "", &check_text, nullptr},
    {Var::dump_on_exit, "", &check_flag, nullptr},
    {Var::stall_warn_ms, "", &check_integer, nullptr},
    {Var::stats, "", &check_flag, nullptr},
    {Var::job_key, "", &check_text, nullptr},
    {Var::job_key_file, "", &check_text, nullptr},
    {Var::require_auth, "", &check_flag, nullptr},
    {Var::store_max_bytes, "", &check_bytes, nullptr},
    {Var::tls, "", &check_flag, nullptr},
    {Var::tls_cert_file, "", &check_text, nullptr},
    {Var::tls_key_file, "", &check_text, nullptr},
    {Var::tls_ca_file, "", &check_text, nullptr},
    {Var::host_id, "", &check_text, nullptr},
    {Var::debug, "", &check_enum, nullptr},
    {Var::debug_subsys, "", &check_subsystems, nullptr},
};

#undef HCOMM_FIELD

static_assert(std::size(kBindings) == core::kNumVars, "one binding per variable");

const Binding& binding(Var var) {
  return kBindings[static_cast<size_t>(var)];
}

/// Read by bootstrap::read_launch_env(), with the other launchers' variables.
bool launch_variable(Var var) {
  return var == Var::rank || var == Var::world_size || var == Var::root_addr;
}

}  // namespace

namespace api {

Status apply_variable(core::Var var, std::string_view text, Config* c) {
  const ConfigVar& v = core::config_var(var);
  const Binding& b = binding(var);
  if (b.var != var)
    return Status(HCOMM_ERR_INTERNAL, std::string(v.name) + ": bindings out of order");
  if (text.empty() && (v.flags & core::kEmptyIsValue) == 0) return Status();
  return b.apply(v, text, c);
}

std::optional<std::string> field_text(const Config& c, core::Var var) {
  const Binding& b = binding(var);
  if (b.show == nullptr) return std::nullopt;
  return b.show(c);
}

const char* applied_field(core::Var var) {
  return binding(var).field;
}

}  // namespace api

Expected<Config> Config::from_env() {
  Config c;
  auto launch = bootstrap::read_launch_env();
  if (!launch) return launch.status();
  c.rank = launch->rank;
  c.world_size = launch->world_size;
  if (!launch->root_addr.empty()) c.root_addr = launch->root_addr;

  for (const ConfigVar& v : core::config_vars()) {
    // The launcher's variables are read above; those of no field by the layer that uses them.
    if (launch_variable(v.id) || binding(v.id).show == nullptr) continue;
    const auto text = core::env_text(v.id);
    if (!text) continue;
    Status st = api::apply_variable(v.id, *text, &c);
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
  if (const auto names = core::split_list(c.socket_ifname); names.size() > 2)
    return invalid("HCOMM_SOCKET_IFNAME='" + c.socket_ifname + "' lists " +
                   std::to_string(names.size()) +
                   " interfaces: name one, or two (the primary links' and the fallback's)");
  return c;
}

}  // namespace hcomm
