// Every parser of configuration text: core/parse (integers, reals, byte counts, durations), the
// per-variable parsing of core/config_vars, HCOMM_DEBUG_SUBSYS, HCOMM_ALGO, host:port, and the
// launchers' environment (bootstrap/launch_env). The first byte picks the parser; the rest is
// the text (for the environment: lines of a variable's index byte and its value).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bootstrap/launch_env.hpp"
#include "collectives/algorithm_choice.hpp"
#include "core/config_vars.hpp"
#include "core/log.hpp"
#include "core/parse.hpp"

using namespace hcomm;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void parse_var(uint8_t which, std::string_view text) {
  const core::ConfigVar& var = core::config_vars()[which % core::kNumVars];
  switch (var.kind) {
    case core::VarKind::integer:
    case core::VarKind::duration: {
      auto v = core::parse_integer_var(var, text);
      if (v.ok()) check((v.value() >= var.min && v.value() <= var.max) || v.value() == 0);
      break;
    }
    case core::VarKind::bytes: {
      auto v = core::parse_bytes_var(var, text);
      if (v.ok()) check(v.value() <= static_cast<uint64_t>(var.max) || v.value() == 0);
      break;
    }
    case core::VarKind::real: {
      auto v = core::parse_real_var(var, text);
      if (v.ok()) check(std::isfinite(v.value()));
      break;
    }
    case core::VarKind::flag:
      (void)core::parse_flag_var(var, text);
      break;
    case core::VarKind::enumeration: {
      auto v = core::parse_enum_var(var, text);
      if (v.ok()) check(v.value() < var.num_values);
      break;
    }
    case core::VarKind::text:
    case core::VarKind::spec:
      check(!core::parse_integer_var(var, text).ok());  // not a number variable
      break;
  }
  (void)core::accepted_text(var);
  (void)core::not_accepted(var, text);
}

// The variables the launchers set, by index.
constexpr const char* kLaunchVars[] = {
    "HCOMM_RANK",           "HCOMM_WORLD_SIZE",     "HCOMM_LOCAL_RANK",
    "HCOMM_LOCAL_SIZE",     "HCOMM_ROOT_ADDR",      "RANK",
    "WORLD_SIZE",           "MASTER_ADDR",          "MASTER_PORT",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID",
    "SLURM_NTASKS",         "SLURM_NPROCS",
};
constexpr size_t kNumLaunchVars = sizeof(kLaunchVars) / sizeof(kLaunchVars[0]);

void launch_env(std::string_view text) {
  for (const char* name : kLaunchVars) unsetenv(name);
  while (!text.empty()) {
    const size_t eol = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(std::min(eol + 1, text.size()));
    if (line.empty()) continue;
    const std::string value(line.substr(1));
    if (value.find('\0') != std::string::npos) continue;
    setenv(kLaunchVars[static_cast<uint8_t>(line[0]) % kNumLaunchVars], value.c_str(), 1);
  }
  auto env = bootstrap::read_launch_env();
  if (env.ok() && env.value().rank != -1)
    check(env.value().rank >= 0 && env.value().rank < env.value().world_size);
  if (env.ok() && !env.value().root_addr.empty())
    (void)bootstrap::parse_host_port(env.value().root_addr);
  for (const char* name : kLaunchVars) unsetenv(name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t which = data[1];
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  switch (data[0] % 10) {
    case 0:
      if (auto v = core::parse_integer(text)) check(core::parse_integer(std::to_string(*v)) == v);
      break;
    case 1:
      if (auto v = core::parse_real(text)) check(std::isfinite(*v));
      break;
    case 2:
      if (auto v = core::parse_bytes(text)) (void)core::format_bytes(*v);
      break;
    case 3: {
      const std::chrono::nanoseconds units[] = {std::chrono::microseconds(1),
                                                std::chrono::milliseconds(1),
                                                std::chrono::seconds(1), std::chrono::minutes(1)};
      if (auto v = core::parse_duration(text, units[which % 4])) check(v->count() >= 0);
      break;
    }
    case 4:
      parse_var(which, text);
      break;
    case 5:
      (void)core::log::parse_subsystems(text);
      break;
    case 6: {
      auto hp = bootstrap::parse_host_port(std::string(text));
      if (hp.ok()) check(!hp.value().host.empty());
      break;
    }
    case 7:
      launch_env(text);
      break;
    case 8:
      (void)collectives::AlgorithmChoice::parse(std::string(text));
      break;
    case 9:
      (void)core::find_config_var(text);
      (void)core::trim(text);
      break;
  }
  return 0;
}
