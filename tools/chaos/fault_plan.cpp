// Parsing of --fault and --flap: "key=value" fields separated by commas. Commands may contain
// commas themselves (nft sets, ...), so a comma separates fields only where a known key and '='
// follow it.
#include "chaos/fault_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "chaos/format.hpp"
#include "chaos/options.hpp"
#include "core/parse.hpp"

namespace hcomm::tools::chaos {
namespace {

using Fields = std::map<std::string, std::string>;

// Splits `spec` into its fields; `what` names the option in messages.
Fields split_fields(const std::string& what, const std::string& spec,
                    const std::vector<std::string>& keys) {
  auto key_at = [&](size_t pos) -> std::string {
    for (const std::string& k : keys)
      if (spec.compare(pos, k.size() + 1, k + "=") == 0) return k;
    return "";
  };
  if (key_at(0).empty())
    usage_error(what + " '" + spec + "': expected fields key=value, starting with one of " + [&] {
      std::string all;
      for (const std::string& k : keys) all += (all.empty() ? "" : ", ") + k;
      return all;
    }());
  Fields fields;
  size_t start = 0;
  while (start < spec.size()) {
    const std::string key = key_at(start);
    size_t value_start = start + key.size() + 1;
    size_t next = value_start;
    while (next < spec.size() && !(spec[next] == ',' && !key_at(next + 1).empty())) ++next;
    if (!fields.emplace(key, spec.substr(value_start, next - value_start)).second)
      usage_error(what + " '" + spec + "': '" + key + "' given twice");
    start = next + 1;
  }
  return fields;
}

double seconds_field(const std::string& what, const Fields& f, const std::string& key) {
  auto v = parse_seconds(f.at(key));
  if (!v || *v > 1e6)
    usage_error(what + ": " + key + "='" + f.at(key) + "' is not a number of seconds >= 0");
  return *v;
}

int rank_field(const std::string& what, const std::string& key, const std::string& text) {
  const auto v = core::parse_integer(text);
  if (!v || *v < 0 || *v > (1 << 30))
    usage_error(what + ": " + key + "='" + text + "' is not a rank");
  return static_cast<int>(*v);
}

/// "IFACE" of "VALUE@IFACE" (and VALUE into `value`); a usage error when either is missing or
/// IFACE is not a plain interface name.
std::string interface_of(const std::string& what, const std::string& action, std::string& value) {
  const size_t colon = action.find(':');
  const size_t at = action.rfind('@');
  if (at == std::string::npos || at <= colon + 1 || at + 1 == action.size())
    usage_error(what + ": do='" + action + "': expected " + action.substr(0, colon) +
                ":VALUE@INTERFACE");
  value = action.substr(colon + 1, at - colon - 1);
  const std::string iface = action.substr(at + 1);
  const bool plain =
      iface.size() < 16 && std::all_of(iface.begin(), iface.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      });
  if (!plain) usage_error(what + ": '" + iface + "' is not a network interface name");
  return iface;
}

/// loss:PERCENT@IFACE: nftables drops PERCENT of the packets in and out of IFACE at random
/// (numgen random), in steps of 0.1%; the undo deletes the table.
void make_loss(const std::string& what, const std::string& action, Fault& fault) {
  std::string value;
  const std::string iface = interface_of(what, action, value);
  if (!value.empty() && value.back() == '%') value.pop_back();
  const auto pct = core::parse_real(value);
  if (!pct || *pct <= 0 || *pct > 100)
    usage_error(what + ": loss '" + value + "' is not a percentage in (0, 100]");
  const long per_mille = std::lround(*pct * 10);
  std::string table = "hcomm_chaos_loss_" + iface;
  std::replace_if(
      table.begin(), table.end(), [](char c) { return c == '-' || c == '.'; }, '_');
  std::string rules = "add table inet " + table + "; ";
  for (const char* dir : {"input", "output"}) {
    const std::string chain = std::string("add chain inet ") + table + " " + dir;
    rules += chain + " { type filter hook " + dir + " priority 0; }; ";
    rules += std::string("add rule inet ") + table + " " + dir + " " +
             (dir[0] == 'i' ? "iifname" : "oifname") + " \"" + iface +
             "\" numgen random mod 1000 < " + std::to_string(per_mille) + " drop; ";
  }
  fault.command = "nft '" + rules + "'";
  fault.undo = "nft delete table inet " + table;
}

/// rate:RATE@IFACE: a tbf qdisc holds what leaves IFACE to RATE (tc's units: 100mbit, 1gbit,
/// ...); the undo deletes it. Its burst is 10 ms at RATE, at least 64 KiB.
void make_rate(const std::string& what, const std::string& action, Fault& fault) {
  std::string value;
  const std::string iface = interface_of(what, action, value);
  size_t digits = 0;
  while (digits < value.size() &&
         (std::isdigit(static_cast<unsigned char>(value[digits])) || value[digits] == '.'))
    ++digits;
  const auto number = core::parse_real(value.substr(0, digits));
  static const std::map<std::string, double> kUnits = {
      {"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}};
  const auto unit = kUnits.find(value.substr(digits));
  if (!number || *number <= 0 || unit == kUnits.end())
    usage_error(what + ": rate '" + value + "' is not a rate such as 100mbit or 1gbit");
  const double bits_per_s = *number * unit->second;
  const long burst = std::max(65536L, std::lround(bits_per_s / 8 / 100));
  fault.command = "tc qdisc replace dev " + iface + " root tbf rate " + value + " burst " +
                  std::to_string(burst) + " latency 50ms";
  fault.undo = "tc qdisc del dev " + iface + " root";
}

Fault parse_fault(const std::string& label, const std::string& spec) {
  const std::string what = "--fault " + label.substr(label.find(' ') + 1);
  Fields f = split_fields(what, spec, {"at", "do", "for", "undo", "rank"});
  if (!f.count("at") || !f.count("do")) usage_error(what + " '" + spec + "': needs at= and do=");
  Fault fault;
  fault.label = label;
  fault.at_s = seconds_field(what, f, "at");
  if (f.count("for")) {
    fault.for_s = seconds_field(what, f, "for");
    if (*fault.for_s <= 0) usage_error(what + ": for= must be > 0");
  }
  if (f.count("rank")) fault.injector = rank_field(what, "rank", f["rank"]);
  const std::string& action = f["do"];
  if (action.rfind("cmd:", 0) == 0) {
    fault.kind = Fault::Kind::command;
    fault.command = action.substr(4);
    if (fault.command.empty()) usage_error(what + ": do=cmd: needs a command");
    if (f.count("undo")) {
      fault.undo = f["undo"];
      if (fault.undo.empty()) usage_error(what + ": undo= needs a command");
      if (!fault.for_s) usage_error(what + ": undo= needs for= (when to run it)");
    }
  } else if (action.rfind("loss:", 0) == 0 || action.rfind("rate:", 0) == 0) {
    fault.kind = Fault::Kind::command;
    if (action[0] == 'l')
      make_loss(what, action, fault);
    else
      make_rate(what, action, fault);
    if (f.count("undo")) usage_error(what + ": undo= is for cmd: (" + action + " ends by itself)");
    if (!fault.for_s) usage_error(what + ": do=" + action + " needs for= (how long it lasts)");
  } else if (action.rfind("stop:", 0) == 0 || action.rfind("kill:", 0) == 0) {
    const bool stop = action[0] == 's';
    fault.kind = stop ? Fault::Kind::stop : Fault::Kind::kill;
    fault.target = rank_field(what, "do", action.substr(5));
    if (f.count("undo"))
      usage_error(what + ": undo= is for cmd: (" +
                  (stop ? "SIGCONT ends a stop" : "a kill is final") + ")");
    if (stop && !fault.for_s) fault.for_s = 1.0;
    if (!stop && fault.for_s) usage_error(what + ": a kill has no for=");
  } else {
    usage_error(what + ": do='" + action +
                "': expected cmd:COMMAND, loss:PERCENT@IFACE, rate:RATE@IFACE, stop:RANK or "
                "kill:RANK");
  }
  return fault;
}

// One fault per down phase: down at start + k * period, up down_for (default: half a period)
// later.
std::vector<Fault> parse_flap(int number, const std::string& spec) {
  const std::string what = "--flap " + std::to_string(number);
  Fields f =
      split_fields(what, spec, {"start", "period", "down_for", "count", "down", "up", "rank"});
  for (const char* key : {"start", "period", "count", "down", "up"})
    if (!f.count(key)) usage_error(what + " '" + spec + "': needs " + key + "=");
  const double start = seconds_field(what, f, "start");
  auto period_ms = parse_ms(f["period"]);
  if (!period_ms || *period_ms < 2 || *period_ms > 1e9)
    usage_error(what + ": period='" + f["period"] + "' is not a number of milliseconds >= 2");
  double down_ms = *period_ms / 2;
  if (f.count("down_for")) {
    auto d = parse_ms(f["down_for"]);
    if (!d || *d < 1 || *d >= *period_ms)
      usage_error(what + ": down_for='" + f["down_for"] +
                  "' is not a number of milliseconds >= 1 and below the period");
    down_ms = *d;
  }
  const auto parsed_count = core::parse_integer(f["count"]);
  if (!parsed_count || *parsed_count < 1 || *parsed_count > 100000)
    usage_error(what + ": count='" + f["count"] + "' is not a number 1..100000");
  const long count = static_cast<long>(*parsed_count);
  if (f["down"].empty() || f["up"].empty()) usage_error(what + ": down= and up= need commands");
  std::vector<Fault> out;
  for (long k = 0; k < count; ++k) {
    Fault fault;
    fault.kind = Fault::Kind::command;
    fault.label = "flap " + std::to_string(number) + "." + std::to_string(k + 1);
    fault.at_s = start + static_cast<double>(k) * *period_ms / 1000;
    fault.for_s = down_ms / 1000;
    fault.command = f["down"];
    fault.undo = f["up"];
    if (f.count("rank")) fault.injector = rank_field(what, "rank", f["rank"]);
    out.push_back(fault);
  }
  return out;
}

}  // namespace

std::string Fault::describe() const {
  const std::string by = " (sent by rank " + std::to_string(injector) + ")";
  switch (kind) {
    case Kind::stop:
      return "SIGSTOP rank " + std::to_string(target) + by + " at " + format("%.3f s", at_s) +
             ", SIGCONT at " + format("%.3f s", end_s());
    case Kind::kill:
      return "SIGKILL rank " + std::to_string(target) + by + " at " + format("%.3f s", at_s);
    case Kind::command:
      break;
  }
  std::string d = "on rank " + std::to_string(injector) + " at " + format("%.3f s", at_s) + ": '" +
                  command + "'";
  if (!undo.empty()) return d + ", at " + format("%.3f s", end_s()) + ": '" + undo + "'";
  if (for_s) return d + " (lasting until " + format("%.3f s", end_s()) + ")";
  return d;
}

FaultPlan FaultPlan::parse(const std::vector<std::string>& faults,
                           const std::vector<std::string>& flaps) {
  FaultPlan plan;
  for (size_t i = 0; i < faults.size(); ++i)
    plan.faults_.push_back(parse_fault("fault " + std::to_string(i + 1), faults[i]));
  for (size_t i = 0; i < flaps.size(); ++i)
    for (Fault& f : parse_flap(static_cast<int>(i + 1), flaps[i])) plan.faults_.push_back(f);
  std::stable_sort(plan.faults_.begin(), plan.faults_.end(),
                   [](const Fault& a, const Fault& b) { return a.at_s < b.at_s; });
  return plan;
}

void FaultPlan::resolve(int world_size) {
  for (Fault& f : faults_) {
    const std::string what =
        f.label + " (" + (f.kind == Fault::Kind::command ? "cmd" : "signal") + ")";
    if (f.kind != Fault::Kind::command) {
      if (f.target >= world_size)
        usage_error(what + ": rank " + std::to_string(f.target) + " does not exist (" +
                    std::to_string(world_size) + " ranks)");
      if (f.injector < 0) {
        if (world_size < 2 && f.kind == Fault::Kind::stop)
          usage_error(what + ": stopping a rank needs another one to continue it");
        f.injector = f.target == 0 && world_size > 1 ? 1 : 0;
      }
      if (f.kind == Fault::Kind::stop && f.injector == f.target)
        usage_error(what + ": rank " + std::to_string(f.target) +
                    " cannot stop itself (nobody would continue it): pick another rank=");
    }
    if (f.injector < 0) f.injector = 0;
    if (f.injector >= world_size)
      usage_error(what + ": rank=" + std::to_string(f.injector) + " does not exist (" +
                  std::to_string(world_size) + " ranks)");
  }
}

bool FaultPlan::has_kill() const {
  return std::any_of(faults_.begin(), faults_.end(),
                     [](const Fault& f) { return f.kind == Fault::Kind::kill; });
}

std::optional<std::pair<double, double>> FaultPlan::span() const {
  if (faults_.empty()) return std::nullopt;
  double last = 0;
  for (const Fault& f : faults_) last = std::max(last, f.end_s());
  return std::make_pair(faults_.front().at_s, last);
}

double FaultPlan::loss_reference_s(double t_s) const {
  std::optional<double> kill, any;
  for (const Fault& f : faults_) {
    if (f.at_s > t_s) break;
    any = f.at_s;
    if (f.kind == Fault::Kind::kill) kill = f.at_s;
  }
  return kill.value_or(any.value_or(0));
}

bool FaultPlan::is_victim(size_t i, int rank) const {
  const Fault& f = faults_.at(i);
  return f.kind != Fault::Kind::command && f.target == rank;
}

}  // namespace hcomm::tools::chaos
