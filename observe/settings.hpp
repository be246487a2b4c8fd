// observe/'s configuration: the HCOMM_* variables of the observability section
// (core/config_vars), read once per process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "hcomm/status.hpp"

namespace hcomm::observe {

struct Settings {
  int profile = 0;                ///< HCOMM_PROFILE: 0 off, 1 operations, 2 also transfers
  std::string profile_file;       ///< HCOMM_PROFILE_FILE ("": per-rank default names)
  size_t trace_buffer = 2000;     ///< HCOMM_TRACE_BUFFER_SIZE
  std::string dump_dir = "/tmp";  ///< HCOMM_DUMP_DIR
  bool dump_on_exit = false;      ///< HCOMM_DUMP_ON_EXIT
  int64_t stall_warn_ms = 10000;  ///< HCOMM_STALL_WARN_MS (0: off)
  bool stats = true;              ///< HCOMM_STATS
  /// Operations a communicator keeps while profiling (the profile's ring; dropped ones counted).
  static constexpr size_t kProfileOps = 200000;

  /// From the environment; a variable set to something it does not accept is an error naming it.
  static Expected<Settings> from_env();
  /// The profile's path for the process of `rank` in a job of `world_size` ranks.
  std::string profile_path(int rank, int world_size) const;
  /// Whether anything is recorded per operation at all.
  bool records() const { return trace_buffer > 0 || profile > 0 || stall_warn_ms > 0; }
};

}  // namespace hcomm::observe
