#include "core/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>

#include "core/config_vars.hpp"

namespace hcomm::core::log {
namespace {

std::atomic<int> g_level{-1};  // -1: environment not read yet
std::atomic<uint32_t> g_subsys{kAll};
std::atomic<int> g_rank{-1};
std::once_flag g_once;

static_assert(std::size(kDebugLevels) == static_cast<size_t>(Level::trace) + 1,
              "kDebugLevels names log::Level's values in its order");

/// HCOMM_DEBUG's level; WARN, with a line saying so, when it does not parse.
Level level_from_env() {
  const ConfigVar& var = config_var(Var::debug);
  const auto text = env_text(Var::debug);
  if (!text) return Level::warn;
  auto level = parse_enum_var(var, *text);
  if (level) return static_cast<Level>(*level);
  std::fprintf(stderr, "hcomm: %s; logging at WARN\n", level.status().message().c_str());
  return Level::warn;
}

/// HCOMM_DEBUG_SUBSYS's mask; every subsystem, with a line saying so, when it does not parse.
uint32_t subsystems_from_env() {
  const auto text = env_text(Var::debug_subsys);
  if (!text) return kAll;
  if (auto mask = parse_subsystems(*text)) return *mask;
  std::fprintf(stderr, "hcomm: %s; logging every subsystem\n",
               not_accepted(config_var(Var::debug_subsys), *text).message().c_str());
  return kAll;
}

const char* level_name(Level l) {
  switch (l) {
    case Level::error:
      return "ERROR";
    case Level::warn:
      return "WARN";
    case Level::info:
      return "INFO";
    case Level::debug:
      return "DEBUG";
    case Level::trace:
      return "TRACE";
    default:
      return "";
  }
}

const char* subsys_name(Subsys s) {
  switch (s) {
    case kInit:
      return "INIT";
    case kBoot:
      return "BOOT";
    case kNet:
      return "NET";
    case kColl:
      return "COLL";
    case kActor:
      return "ACTOR";
    default:
      return "ALL";
  }
}

}  // namespace

std::optional<uint32_t> parse_subsystems(std::string_view text) {
  struct Name {
    const char* name;
    uint32_t mask;
  };
  static constexpr Name kNames[] = {{"INIT", kInit}, {"BOOT", kBoot},   {"NET", kNet},
                                    {"COLL", kColl}, {"ACTOR", kActor}, {"ALL", kAll}};
  uint32_t mask = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string token(text.substr(pos, end - pos));
    pos = end + 1;
    std::string upper;
    for (char c : token)
      if (!std::isspace(static_cast<unsigned char>(c)))
        upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (upper.empty()) continue;
    const Name* found = nullptr;
    for (const Name& n : kNames)
      if (upper == n.name) found = &n;
    if (found == nullptr) return std::nullopt;
    mask |= found->mask;
  }
  if (mask == 0) return std::nullopt;
  return mask;
}

void reload_from_env() {
  g_subsys.store(subsystems_from_env());
  g_level.store(static_cast<int>(level_from_env()));
}

bool enabled(Level level, Subsys subsys) {
  if (g_level.load(std::memory_order_relaxed) < 0) std::call_once(g_once, reload_from_env);
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed) &&
         (g_subsys.load(std::memory_order_relaxed) & subsys) != 0;
}

void set_rank(int rank) {
  g_rank.store(rank);
}

void write(Level level, Subsys subsys, const char* fmt, ...) {
  char line[1024];
  int rank = g_rank.load();
  int n = rank >= 0
              ? snprintf(line, sizeof(line), "hcomm[rank %d] %s %s: ", rank, subsys_name(subsys),
                         level_name(level))
              : snprintf(line, sizeof(line), "hcomm[pid %d] %s %s: ", static_cast<int>(getpid()),
                         subsys_name(subsys), level_name(level));
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof(line) - static_cast<size_t>(n) - 1, fmt, ap);
  va_end(ap);
  size_t len = static_cast<size_t>(n) + static_cast<size_t>(m < 0 ? 0 : m);
  if (len > sizeof(line) - 2) len = sizeof(line) - 2;
  line[len++] = '\n';
  // One write(2) per line so lines of concurrent threads and ranks do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line, len);
  (void)ignored;
}

}  // namespace hcomm::core::log
