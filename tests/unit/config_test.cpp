// Configuration: the table of HCOMM_* variables (core/config_vars.cpp) against Config's defaults
// and Config::from_env(): every variable reads its default's text back as the default, bad values
// are refused naming the variable, its value and what it accepts, the modes' enums round-trip,
// and the checks across variables hold.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "api/config_env.hpp"
#include "core/config_vars.hpp"
#include "core/log.hpp"
#include "hcomm/config.hpp"

using namespace hcomm;  // NOLINT
using core::ConfigVar;
using core::Var;
using core::VarKind;

namespace {

/// Every variable of the table and the other launchers', cleared for a test and restored after.
class CleanEnv {
 public:
  CleanEnv() {
    for (const ConfigVar& v : core::config_vars()) names_.push_back(v.name);
    for (const char* n :
         {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
          "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS"})
      names_.push_back(n);
    for (const std::string& n : names_) {
      if (const char* v = std::getenv(n.c_str())) saved_[n] = v;
      unsetenv(n.c_str());
    }
  }
  ~CleanEnv() {
    for (const std::string& n : names_) {
      auto it = saved_.find(n);
      if (it == saved_.end())
        unsetenv(n.c_str());
      else
        setenv(n.c_str(), it->second.c_str(), 1);
    }
  }
  void set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

 private:
  std::vector<std::string> names_;
  std::map<std::string, std::string> saved_;
};

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// A value the variable accepts that is not its default; "" when the test knows none.
std::string other_value(const ConfigVar& v) {
  const std::string def = v.default_text;
  const std::string lo = std::to_string(v.min);
  const std::string hi = std::to_string(v.max);
  switch (v.kind) {
    case VarKind::integer:
    case VarKind::duration:
    case VarKind::bytes:
    case VarKind::real:
      return def == lo ? hi : lo;
    case VarKind::flag:
      return def == "1" ? "0" : "1";
    case VarKind::enumeration:
      return def == v.values[0] ? v.values[1] : v.values[0];
    case VarKind::text:
      return def == "x" ? "y" : "x";
    case VarKind::spec: {
      static const std::map<Var, std::string> kSpecs = {
          {Var::root_addr, "10.0.0.1:1"}, {Var::transport, "tcp"}, {Var::algo, "ring"},
          {Var::failover_limit, "3/10"},  {Var::qos, "min=30"},    {Var::debug_subsys, "NET"},
      };
      auto it = kSpecs.find(v.id);
      return it == kSpecs.end() ? std::string() : it->second;
    }
  }
  return "";
}

}  // namespace

TEST_CASE("the table lists every variable once, in the order of Var, as api maps it") {
  std::map<std::string, int> seen;
  for (size_t i = 0; i < core::kNumVars; ++i) {
    const ConfigVar& v = core::config_vars()[i];
    CAPTURE(v.name);
    CHECK(static_cast<size_t>(v.id) == i);
    CHECK(std::string(v.name).rfind("HCOMM_", 0) == 0);
    CHECK(++seen[v.name] == 1);
    CHECK(std::string(v.meaning).size() > 10);
    CHECK(std::string(v.field) == api::applied_field(v.id));
    CHECK(core::find_config_var(v.name) == &v);
    CHECK_FALSE(core::accepted_text(v).empty());
    if (v.kind == VarKind::enumeration) {
      bool listed = false;
      for (size_t k = 0; k < v.num_values; ++k)
        listed |= std::string(v.values[k]) == v.default_text;
      CHECK(listed);
    }
  }
  CHECK(core::find_config_var("HCOMM_NO_SUCH_THING") == nullptr);
}

TEST_CASE("Config's defaults are the table's, and every variable reads its default back") {
  const Config defaults;
  for (const ConfigVar& v : core::config_vars()) {
    CAPTURE(v.name);
    const auto shown = api::field_text(defaults, v.id);
    if (shown) CHECK(*shown == std::string(v.default_text));  // the struct and the table agree
    const std::string other = other_value(v);
    Config c;
    if (!other.empty()) {
      CAPTURE(other);
      Status st = api::apply_variable(v.id, other, &c);
      REQUIRE_MESSAGE(st.ok(), st.message());
      if (shown) CHECK(*api::field_text(c, v.id) != std::string(v.default_text));
      if (shown && v.kind != VarKind::spec) CHECK(*api::field_text(c, v.id) == other);
    }
    if (*v.default_text == '\0') continue;  // unset: nothing to read back
    Status st = api::apply_variable(v.id, v.default_text, &c);
    REQUIRE_MESSAGE(st.ok(), st.message());
    if (shown) CHECK(*api::field_text(c, v.id) == std::string(v.default_text));
  }
}

TEST_CASE("Config::from_env in a clean environment is Config{}, field by field") {
  CleanEnv env;
  auto c = Config::from_env();
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  const Config defaults;
  for (const ConfigVar& v : core::config_vars()) {
    CAPTURE(v.name);
    CHECK(api::field_text(*c, v.id) == api::field_text(defaults, v.id));
  }
}

TEST_CASE("every variable that sets a field is applied by Config::from_env") {
  for (const ConfigVar& v : core::config_vars()) {
    const std::string other = other_value(v);
    if (*v.field == '\0' || other.empty()) continue;
    CAPTURE(v.name);
    CAPTURE(other);
    CleanEnv env;
    env.set(v.name, other);
    if (v.id == Var::rank) env.set("HCOMM_WORLD_SIZE", "100");
    if (v.id == Var::world_size) env.set("HCOMM_RANK", "0");
    // Keep the checks across variables satisfied whichever end of its range a deadline takes.
    if (v.id == Var::keepalive_ms || v.id == Var::keepalive_timeout_ms ||
        v.id == Var::peer_timeout_ms || v.id == Var::reconnect_min_ms ||
        v.id == Var::reconnect_max_ms)
      continue;
    auto c = Config::from_env();
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    Config expected;
    REQUIRE(api::apply_variable(v.id, other, &expected).ok());
    CHECK(api::field_text(*c, v.id) == api::field_text(expected, v.id));
  }
}

TEST_CASE("bad values are refused naming the variable, the value and what is accepted") {
  struct Case {
    Var var;
    const char* value;
    const char* accepted;  ///< part of the message
  };
  const Case cases[] = {
      {Var::rank, "x", "[0, 2147483647]"},
      {Var::world_size, "0", "[1, 2147483647]"},
      {Var::root_addr, "nohost", "host:port"},
      {Var::transport, "carrier-pigeon", "tcp"},
      {Var::send_buf_size, "4X", "suffix"},
      {Var::recv_buf_size, "3G", "2G-1"},
      {Var::sockets_per_peer, "17", "[1, 16]"},
      {Var::rdma_gid_index, "-2", "[-1, 255]"},
      {Var::num_qps, "0", "[1, 16]"},
      {Var::max_inline, "8K", "4096"},
      {Var::rdma_timeout, "32", "[1, 31]"},
      {Var::rdma_retry_cnt, "7", "retry forever"},
      {Var::rdma_retry_cnt, "-1", "[0, 6]"},
      {Var::rdma_traffic_class, "256", "[0, 255]"},
      {Var::rdma_buffers, "pinned", "zero_copy, dynamic or static"},
      {Var::rdma_pin_budget_mb, "0", "[1, 16777216]"},
      {Var::chunk_size, "63", "64 bytes"},
      {Var::chunk_size, "2G", "64 bytes"},
      {Var::algo, "gather=ring", "gather"},
      {Var::calibrate, "yes", "1 (on) or 0 (off)"},
      {Var::connect_timeout_ms, "0", "milliseconds"},
      {Var::timeout_ms, "10s", "milliseconds"},
      {Var::failover, "sometimes", "auto, on or off"},
      {Var::keepalive_ms, "-5", "milliseconds"},
      {Var::phi_threshold, "101", "up to 100"},
      {Var::phi_threshold, "-1", "up to 100"},
      {Var::failover_limit, "5", "R/T"},
      {Var::failover_limit, "0/30", "R/T"},
      {Var::failover_limit, "5/86401", "R/T"},
      {Var::qos, "min=200", "HCOMM_QOS"},
      {Var::link_gbps, "fast", "Gbit/s"},
      {Var::fallback_link_gbps, "-1", "Gbit/s"},
      {Var::actor_threads, "65", "[1, 64]"},
      {Var::spin_us, "-2", "[-1, 10000000]"},
      {Var::debug, "loud", "OFF, ERROR, WARN, INFO, DEBUG or TRACE"},
      {Var::debug, "6", "0..5"},
      {Var::debug_subsys, "NET,DISK", "INIT, BOOT, NET, COLL, ACTOR, ALL"},
  };
  for (const Case& k : cases) {
    const ConfigVar& v = core::config_var(k.var);
    CAPTURE(v.name);
    CAPTURE(k.value);
    Config c;
    Status st = api::apply_variable(k.var, k.value, &c);
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == HCOMM_ERR_INVALID_ARG);
    CHECK_MESSAGE(contains(st.message(), v.name), st.message());
    CHECK_MESSAGE(contains(st.message(), k.value), st.message());
    CHECK_MESSAGE(contains(st.message(), k.accepted), st.message());
    if (*v.field == '\0') continue;  // read by a lower layer, not by from_env
    CleanEnv env;
    env.set(v.name, k.value);
    if (k.var == Var::rank) env.set("HCOMM_WORLD_SIZE", "2");
    if (k.var == Var::world_size) env.set("HCOMM_RANK", "0");
    auto r = Config::from_env();
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == HCOMM_ERR_INVALID_ARG);
    CHECK_MESSAGE(contains(r.status().message(), v.name), r.status().message());
  }
}

TEST_CASE("text variables take anything, \"\" is unset except for HCOMM_TCP_CONGESTION") {
  CleanEnv env;
  env.set("HCOMM_SOCKET_IFNAME", "");
  env.set("HCOMM_NUM_QPS", "");
  env.set("HCOMM_TCP_CONGESTION", "");
  auto c = Config::from_env();
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->socket_ifname.empty());
  CHECK(c->num_qps == Config().num_qps);
  CHECK(c->tcp_congestion.empty());  // the kernel's
  CHECK_FALSE(core::env_text(Var::num_qps));
  CHECK(core::env_text(Var::tcp_congestion) == std::string());
  env.set("HCOMM_TCP_CONGESTION", "bbr");
  env.set("HCOMM_RDMA_DEVICE", "mlx5_0");
  c = Config::from_env();
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->tcp_congestion == "bbr");
  CHECK(c->rdma_device == "mlx5_0");
}

TEST_CASE("FailoverMode and RdmaBufferMode round-trip through their names") {
  for (FailoverMode m : {FailoverMode::automatic, FailoverMode::on, FailoverMode::off}) {
    CAPTURE(to_string(m));
    CleanEnv env;
    env.set("HCOMM_FAILOVER", to_string(m));
    auto c = Config::from_env();
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    CHECK(c->failover == m);
    CHECK(api::field_text(*c, Var::failover) == std::string(to_string(m)));
  }
  for (RdmaBufferMode m :
       {RdmaBufferMode::zero_copy, RdmaBufferMode::dynamic, RdmaBufferMode::fixed}) {
    CAPTURE(to_string(m));
    CleanEnv env;
    env.set("HCOMM_RDMA_BUFFERS", to_string(m));
    auto c = Config::from_env();
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    CHECK(c->rdma_buffers == m);
  }
  CHECK(std::string(to_string(FailoverMode::automatic)) == "auto");
  CHECK(std::string(to_string(RdmaBufferMode::fixed)) == "static");
  Config c;
  REQUIRE(api::apply_variable(Var::failover, " OFF ", &c).ok());  // any case, blanks around
  CHECK(c.failover == FailoverMode::off);
}

TEST_CASE("HCOMM_TRANSPORT: auto is one helper's business, protocols any case") {
  Config c;
  CHECK(c.auto_transport());
  REQUIRE(api::apply_variable(Var::transport, "SHM", &c).ok());
  CHECK(c.transport == "shm");
  CHECK_FALSE(c.auto_transport());
  REQUIRE(api::apply_variable(Var::transport, "Auto", &c).ok());
  CHECK(c.auto_transport());
}

TEST_CASE("the checks across variables still hold") {
  struct Case {
    std::vector<std::pair<const char*, const char*>> set;
    const char* names;  ///< "" when it passes; else part of the message
  };
  const Case cases[] = {
      {{{"HCOMM_KEEPALIVE_MS", "800"}}, "HCOMM_KEEPALIVE_TIMEOUT_MS (800) must exceed"},
      {{{"HCOMM_KEEPALIVE_MS", "100"}, {"HCOMM_KEEPALIVE_TIMEOUT_MS", "101"}}, ""},
      {{{"HCOMM_KEEPALIVE_TIMEOUT_MS", "6000"}}, "HCOMM_PEER_TIMEOUT_MS (5000) must be at least"},
      {{{"HCOMM_KEEPALIVE_TIMEOUT_MS", "6000"}, {"HCOMM_PEER_TIMEOUT_MS", "6000"}}, ""},
      {{{"HCOMM_RECONNECT_MIN_MS", "3000"}}, "HCOMM_RECONNECT_MAX_MS must be at least"},
      {{{"HCOMM_RECONNECT_MIN_MS", "3000"}, {"HCOMM_RECONNECT_MAX_MS", "3000"}}, ""},
      {{{"HCOMM_RANK", "2"}, {"HCOMM_WORLD_SIZE", "2"}}, "out of range for HCOMM_WORLD_SIZE"},
      {{{"HCOMM_RANK", "1"}}, "HCOMM_WORLD_SIZE is not"},
  };
  for (const Case& k : cases) {
    CleanEnv env;
    for (const auto& [name, value] : k.set) env.set(name, value);
    CAPTURE(k.set.front().first);
    auto c = Config::from_env();
    if (*k.names == '\0') {
      CHECK_MESSAGE(c.ok(), c.status().message());
    } else {
      REQUIRE_FALSE(c.ok());
      CHECK(c.status().code() == HCOMM_ERR_INVALID_ARG);
      CHECK_MESSAGE(contains(c.status().message(), k.names), c.status().message());
    }
  }
}

TEST_CASE("special values: chunk 0, gid -1, pin budget in MiB, failover limit R/T, QoS") {
  CleanEnv env;
  env.set("HCOMM_CHUNK_SIZE", "0");
  env.set("HCOMM_RDMA_GID_INDEX", "-1");
  env.set("HCOMM_RDMA_PIN_BUDGET_MB", "16");
  env.set("HCOMM_FAILOVER_LIMIT", "3/10");
  env.set("HCOMM_QOS", "min=30,max=70,priority=2");
  env.set("HCOMM_LINK_GBPS", "2.5");
  env.set("HCOMM_SPIN_US", "0");
  auto c = Config::from_env();
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->chunk_bytes == 0);
  CHECK(c->rdma_gid_index == -1);
  CHECK(c->rdma_pin_budget == size_t{16} << 20);
  CHECK(c->failover_limit == 3);
  CHECK(c->failover_window == std::chrono::seconds(10));
  CHECK(c->qos.min_rate == 30);
  CHECK(c->qos.max_rate == 70);
  CHECK(c->qos.priority == 2);
  CHECK(c->link_gbps == 2.5);
  CHECK(c->spin_us == 0);
  CHECK(api::field_text(*c, Var::qos) == std::string("min=30,max=70,priority=2"));
  CHECK(api::field_text(*c, Var::link_gbps) == std::string("2.5"));
}

TEST_CASE("HCOMM_DEBUG and HCOMM_DEBUG_SUBSYS parse by the table") {
  const ConfigVar& debug = core::config_var(Var::debug);
  CHECK(*core::parse_enum_var(debug, "info") == static_cast<size_t>(core::log::Level::info));
  CHECK(*core::parse_enum_var(debug, "TRACE") == static_cast<size_t>(core::log::Level::trace));
  CHECK(*core::parse_enum_var(debug, "0") == static_cast<size_t>(core::log::Level::off));
  CHECK_FALSE(core::parse_enum_var(debug, "6"));
  CHECK(core::log::parse_subsystems("NET, coll") == (core::log::kNet | core::log::kColl));
  CHECK(core::log::parse_subsystems("ALL") == core::log::kAll);
  CHECK_FALSE(core::log::parse_subsystems("NET,DISK"));
  CHECK_FALSE(core::log::parse_subsystems(","));
}
