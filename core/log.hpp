// Logging: one line per event, tagged with the rank and a subsystem, filtered at run time.
//
// HCOMM_DEBUG=OFF|ERROR|WARN|INFO|DEBUG|TRACE (or 0-5, any case; default WARN) sets the level;
// HCOMM_DEBUG_SUBSYS=INIT,BOOT,NET,COLL,ACTOR (default ALL) limits the subsystems, as
// NCCL_DEBUG_SUBSYS does (core/config_vars.cpp lists both). A value that does not parse is
// reported on stderr once and the default used. Lines go to stderr: "hcomm[rank 2] NET WARN:
// ...". Any thread may log.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace hcomm::core::log {

enum class Level : int { off = 0, error = 1, warn = 2, info = 3, debug = 4, trace = 5 };

enum Subsys : uint32_t {
  kInit = 1u << 0,   ///< communicator creation, configuration
  kBoot = 1u << 1,   ///< rendezvous store
  kNet = 1u << 2,    ///< transports and links
  kColl = 1u << 3,   ///< algorithms and schedules
  kActor = 1u << 4,  ///< actor system, supervision
  kAll = 0xffffffffu,
};

/// True when a message of `level` for `subsys` would be written. Reads the environment once.
bool enabled(Level level, Subsys subsys);
/// Writes one line (printf format). Prefer the HCOMM_LOG macro, which skips formatting when off.
void write(Level level, Subsys subsys, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
/// Sets the rank shown in the prefix (-1 = unknown yet).
void set_rank(int rank);
/// Re-reads HCOMM_DEBUG / HCOMM_DEBUG_SUBSYS (tests change them at run time).
void reload_from_env();
/// HCOMM_DEBUG_SUBSYS's grammar: a comma list of INIT, BOOT, NET, COLL, ACTOR and ALL, any case;
/// nothing when a name is none of them or the list names none.
std::optional<uint32_t> parse_subsystems(std::string_view text);

}  // namespace hcomm::core::log

#define HCOMM_LOG(level, subsys, ...)                                                   \
  do {                                                                                  \
    if (::hcomm::core::log::enabled(::hcomm::core::log::Level::level, subsys))          \
      ::hcomm::core::log::write(::hcomm::core::log::Level::level, subsys, __VA_ARGS__); \
  } while (0)

/// HCOMM_LOG with a level chosen at run time (a hcomm::core::log::Level value).
#define HCOMM_LOG_AT(level_value, subsys, ...)                          \
  do {                                                                  \
    const ::hcomm::core::log::Level hcomm_log_level_ = (level_value);   \
    if (::hcomm::core::log::enabled(hcomm_log_level_, subsys))          \
      ::hcomm::core::log::write(hcomm_log_level_, subsys, __VA_ARGS__); \
  } while (0)
