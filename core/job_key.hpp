// The job's shared secret: what every connection of the job proves it knows before any other
// byte it sends is acted on (core/auth_handshake.hpp).
//
// Source: HCOMM_JOB_KEY (the secret itself) or HCOMM_JOB_KEY_FILE (a file holding it; one
// trailing newline is not part of it). hcomm-run makes a random one per job; under other
// launchers the user exports the same value on every rank. Without either, hcomm runs
// unauthenticated and warns once, unless HCOMM_REQUIRE_AUTH=1, which makes that an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "hcomm/status.hpp"

namespace hcomm::core {

class JobKey {
 public:
  static constexpr size_t kMacBytes = 32;  ///< HMAC-SHA256
  static constexpr size_t kMinSecretBytes = 16;
  using Mac = uint8_t[kMacBytes];

  /// A key over `secret`; HCOMM_ERR_INVALID_ARG when it is shorter than kMinSecretBytes.
  static Expected<std::shared_ptr<const JobKey>> from_secret(std::string secret);

  /// The process's key, read from the environment at the first call (thread-safe) and kept:
  /// null when the job runs without one (warned once), an error when HCOMM_JOB_KEY_FILE cannot
  /// be read, both variables are set, the secret is too short, or HCOMM_REQUIRE_AUTH=1 and none
  /// is given. Every later call returns the same.
  static Expected<std::shared_ptr<const JobKey>> from_environment();

  /// HMAC-SHA256 of `data` under the secret.
  void mac(const void* data, size_t size, Mac out) const;
  /// Compares two MACs in constant time.
  static bool same_mac(const uint8_t* a, const uint8_t* b);

 private:
  explicit JobKey(std::string secret) : secret_(std::move(secret)) {}
  std::string secret_;
};

/// Fills `out` with `size` bytes from the system's cryptographic random source.
Status random_bytes(void* out, size_t size);

/// A fresh random secret as 64 hex digits (what hcomm-run gives a job).
Expected<std::string> make_job_secret();

}  // namespace hcomm::core
