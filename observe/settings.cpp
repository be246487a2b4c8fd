#include "observe/settings.hpp"

#include "core/config_vars.hpp"

namespace hcomm::observe {

namespace {

Status read_integer(core::Var var, int64_t* out) {
  auto text = core::env_text(var);
  if (!text) return {};
  auto v = core::parse_integer_var(core::config_var(var), *text);
  if (!v.ok()) return v.status();
  *out = v.value();
  return {};
}

Status read_flag(core::Var var, bool* out) {
  auto text = core::env_text(var);
  if (!text) return {};
  auto v = core::parse_flag_var(core::config_var(var), *text);
  if (!v.ok()) return v.status();
  *out = v.value();
  return {};
}

}  // namespace

Expected<Settings> Settings::from_env() {
  Settings s;
  int64_t profile = s.profile;
  int64_t buffer = static_cast<int64_t>(s.trace_buffer);
  for (Status st :
       {read_integer(core::Var::profile, &profile),
        read_integer(core::Var::trace_buffer_size, &buffer),
        read_integer(core::Var::stall_warn_ms, &s.stall_warn_ms),
        read_flag(core::Var::dump_on_exit, &s.dump_on_exit), read_flag(core::Var::stats, &s.stats)})
    if (!st.ok()) return st;
  s.profile = static_cast<int>(profile);
  s.trace_buffer = static_cast<size_t>(buffer);
  if (auto f = core::env_text(core::Var::profile_file)) s.profile_file = *f;
  if (auto d = core::env_text(core::Var::dump_dir)) s.dump_dir = *d;
  return s;
}

std::string Settings::profile_path(int rank, int world_size) const {
  const std::string r = std::to_string(rank);
  if (profile_file.empty())
    return world_size == 1 ? "hcomm_profile.json" : "hcomm_profile." + r + ".json";
  std::string path = profile_file;
  bool replaced = false;
  for (size_t at = path.find("%r"); at != std::string::npos; at = path.find("%r", at + r.size())) {
    path.replace(at, 2, r);
    replaced = true;
  }
  if (replaced || world_size == 1) return path;
  // Ranks must not write one file: the rank goes before the extension.
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return path + "." + r;
  return path.substr(0, dot) + "." + r + path.substr(dot);
}

}  // namespace hcomm::observe
