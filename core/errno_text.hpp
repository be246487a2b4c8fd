// errno as text for error messages: "connect to 10.0.0.2:4000: Connection refused".
#pragma once

#include <cstring>
#include <string>

namespace hcomm::core {

/// `what`, a colon and the system's description of `err` (an errno value).
inline std::string errno_text(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

}  // namespace hcomm::core
