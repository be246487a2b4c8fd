#include "core/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace hcomm::core::log {
namespace {

std::atomic<int> g_level{-1};  // -1: environment not read yet
std::atomic<uint32_t> g_subsys{kAll};
std::atomic<int> g_rank{-1};
std::once_flag g_once;

Level parse_level(const char* s) {
  if (s == nullptr || *s == '\0') return Level::warn;
  std::string v(s);
  for (auto& c : v) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  if (v == "OFF" || v == "NONE" || v == "0") return Level::off;
  if (v == "ERROR" || v == "1") return Level::error;
  if (v == "WARN" || v == "2") return Level::warn;
  if (v == "INFO" || v == "3") return Level::info;
  if (v == "DEBUG" || v == "4") return Level::debug;
  if (v == "TRACE" || v == "5") return Level::trace;
  return Level::warn;
}

uint32_t parse_subsys(const char* s) {
  if (s == nullptr || *s == '\0') return kAll;
  uint32_t mask = 0;
  std::string v(s);
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t end = v.find(',', pos);
    if (end == std::string::npos) end = v.size();
    std::string tok = v.substr(pos, end - pos);
    for (auto& c : tok) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
    if (tok == "INIT") mask |= kInit;
    if (tok == "BOOT") mask |= kBoot;
    if (tok == "NET") mask |= kNet;
    if (tok == "COLL") mask |= kColl;
    if (tok == "ACTOR") mask |= kActor;
    if (tok == "ALL") mask |= kAll;
    pos = end + 1;
  }
  return mask == 0 ? kAll : mask;
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

void reload_from_env() {
  g_subsys.store(parse_subsys(std::getenv("HCOMM_DEBUG_SUBSYS")));
  g_level.store(static_cast<int>(parse_level(std::getenv("HCOMM_DEBUG"))));
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
