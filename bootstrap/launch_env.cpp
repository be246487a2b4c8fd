#include "bootstrap/launch_env.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <vector>

#include "core/config_vars.hpp"
#include "core/parse.hpp"

namespace hcomm::bootstrap {
namespace {

/// The value of `name`, or "" when unset (set-but-empty counts as unset).
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string trim(const std::string& s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

Status invalid(std::string message) {
  return Status(HCOMM_ERR_INVALID_ARG, std::move(message));
}

/// One launcher family: its name and the variables that carry rank and size.
struct Family {
  const char* source;
  const char* rank_var;
  const char* size_var;
  const char* size_var_alt;  ///< an older spelling of size_var, or nullptr
};

// hcomm's own local-placement variables, which only hcomm-run sets (launch_variables()).
constexpr char kLocalRankVar[] = "HCOMM_LOCAL_RANK";
constexpr char kLocalSizeVar[] = "HCOMM_LOCAL_SIZE";

/// Every launcher family hcomm understands, its own first (names from the configuration table).
const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      {"HCOMM", core::config_var(core::Var::rank).name,
       core::config_var(core::Var::world_size).name, nullptr},
      {"torchrun", "RANK", "WORLD_SIZE", nullptr},
      {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", nullptr},
      {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS"},
  };
  return all;
}

const char* root_var() {
  return core::config_var(core::Var::root_addr).name;
}

/// Fills rank, world_size and source from the first family with any of its variables set. Every
/// family's values are taken in the ranges of HCOMM_RANK and HCOMM_WORLD_SIZE.
Status read_rank_and_size(LaunchEnv* out) {
  const core::ConfigVar& rank_var = core::config_var(core::Var::rank);
  const core::ConfigVar& size_var = core::config_var(core::Var::world_size);
  for (const Family& f : families()) {
    std::string rank_s = env(f.rank_var);
    const char* size_name = f.size_var;
    std::string size_s = env(f.size_var);
    if (size_s.empty() && f.size_var_alt != nullptr) {
      size_name = f.size_var_alt;
      size_s = env(f.size_var_alt);
    }
    if (rank_s.empty() && size_s.empty()) continue;
    if (rank_s.empty() || size_s.empty()) {
      const char* set = rank_s.empty() ? size_name : f.rank_var;
      const char* unset = rank_s.empty() ? f.rank_var : f.size_var;
      return invalid(std::string(set) + " is set but " + unset + " is not (" + f.source +
                     " launch): set both, or neither");
    }
    auto size = core::parse_named_integer(size_name, size_s, size_var.min, size_var.max);
    if (!size) return size.status();
    auto rank = core::parse_named_integer(f.rank_var, rank_s, rank_var.min, rank_var.max);
    if (!rank) return rank.status();
    if (*rank >= *size) {
      return invalid(std::string(f.rank_var) + "=" + rank_s + " is out of range for " + size_name +
                     "=" + size_s + ": ranks are 0.." + std::to_string(*size - 1));
    }
    out->rank = static_cast<int>(*rank);
    out->world_size = static_cast<int>(*size);
    out->source = f.source;
    return Status();
  }
  return Status();
}

/// Fills root_addr from HCOMM_ROOT_ADDR, else MASTER_ADDR + MASTER_PORT.
Status read_root_addr(LaunchEnv* out) {
  const char* root_name = root_var();
  std::string root = trim(env(root_name));
  if (!root.empty()) {
    auto hp = parse_host_port(root);
    if (!hp) return invalid(std::string(root_name) + "='" + root + "': " + hp.status().message());
    out->root_addr = root;
    return Status();
  }
  std::string addr = trim(env("MASTER_ADDR"));
  std::string port = env("MASTER_PORT");
  if (addr.empty() && port.empty()) return Status();
  if (addr.empty()) {
    return invalid("MASTER_PORT=" + port + " is set but MASTER_ADDR is not: set both, or set " +
                   "HCOMM_ROOT_ADDR=host:port");
  }
  if (port.empty()) {
    return invalid("MASTER_ADDR=" + addr + " is set but MASTER_PORT is not: set both, or set " +
                   "HCOMM_ROOT_ADDR=host:port");
  }
  auto p = core::parse_named_integer("MASTER_PORT", port, 0, 65535);
  if (!p) return p.status();
  std::string joined = addr + ":" + std::to_string(*p);
  auto hp = parse_host_port(joined);
  if (!hp) return invalid("MASTER_ADDR='" + addr + "': " + hp.status().message());
  out->root_addr = joined;
  return Status();
}

/// The first family's variable, then the others' in parentheses.
template <class Pick>
std::string variables(Pick pick) {
  const std::vector<Family>& all = families();
  std::string out = pick(all[0]);
  for (size_t i = 1; i < all.size(); ++i)
    out += std::string(i == 1 ? " (or " : ", ") + pick(all[i]);
  return out + ")";
}

}  // namespace

std::string rank_variables() {
  return variables([](const Family& f) { return f.rank_var; });
}

std::string world_size_variables() {
  return variables([](const Family& f) { return f.size_var; });
}

std::vector<std::string> launch_variables(const LaunchPlace& place) {
  auto entry = [](const char* name, const std::string& value) {
    return std::string(name) + "=" + value;
  };
  const Family& own = families()[0];
  return {entry(own.rank_var, std::to_string(place.rank)),
          entry(own.size_var, std::to_string(place.world_size)),
          entry(kLocalRankVar, std::to_string(place.local_rank)),
          entry(kLocalSizeVar, std::to_string(place.local_size)),
          entry(root_var(), place.root_addr)};
}

bool is_launch_variable(const char* entry) {
  const Family& own = families()[0];
  for (const char* name : {own.rank_var, own.size_var, kLocalRankVar, kLocalSizeVar, root_var()}) {
    const size_t n = std::strlen(name);
    if (std::strncmp(entry, name, n) == 0 && entry[n] == '=') return true;
  }
  return false;
}

Expected<HostPort> parse_host_port(const std::string& s) {
  const std::string example = "expected host:port, e.g. 10.0.0.1:29500 or node001:29500";
  if (s.empty()) return invalid("the address is empty; " + example);
  if (s.front() == '[' || s.find(':') != s.rfind(':')) {
    return invalid("'" + s + "' looks like an IPv6 address, which is not supported yet; " +
                   "use an IPv4 address or a host name (" + example + ")");
  }
  size_t colon = s.find(':');
  if (colon == std::string::npos) return invalid("'" + s + "' has no port; " + example);
  HostPort hp;
  hp.host = s.substr(0, colon);
  std::string port = s.substr(colon + 1);
  if (hp.host.empty()) return invalid("'" + s + "' has no host; " + example);
  for (char c : hp.host) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
      return invalid("'" + s + "' has an invalid character '" + std::string(1, c) +
                     "' in the host; " + example);
    }
  }
  const auto value = port.find_first_not_of("0123456789") == std::string::npos
                         ? core::parse_integer(port)
                         : std::nullopt;
  if (port.empty() || !value)
    return invalid("'" + s + "' has no valid port (0..65535); " + example);
  if (*value > 65535) return invalid("'" + s + "' has a port above 65535; " + example);
  hp.port = static_cast<uint16_t>(*value);
  return hp;
}

Expected<LaunchEnv> read_launch_env() {
  LaunchEnv out;
  Status st = read_rank_and_size(&out);
  if (!st.ok()) return st;
  st = read_root_addr(&out);
  if (!st.ok()) return st;
  return out;
}

}  // namespace hcomm::bootstrap
