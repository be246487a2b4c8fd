// What the fuzz targets that hold job keys share: a check that stops the run (libFuzzer keeps
// the input that reached it) and keys made from fixed secrets.
#pragma once

#include <cstdlib>
#include <memory>

#include "core/job_key.hpp"

namespace hcomm::fuzz {

/// An invariant of the code under test: a false one aborts, and the input is kept as a crash.
inline void check(bool ok) {
  if (!ok) std::abort();
}

inline std::shared_ptr<const core::JobKey> key(const char* secret) {
  auto k = core::JobKey::from_secret(secret);
  check(k.ok());
  return k.value();
}

}  // namespace hcomm::fuzz
