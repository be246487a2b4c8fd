// The mutual challenge-response every hcomm connection starts with when the job has a key
// (core/job_key.hpp): the rendezvous store's, the data and fallback links', their reconnections'.
// Sans-I/O: the owner moves bytes between it and its socket, so a blocking client, an epoll
// server and the fuzzer drive the same code.
//
// Wire (version 1), before any byte of the protocol it guards:
//   both sides, at once:    greeting = magic:u32 "HCAU" | version:u32 | nonce:32 random bytes
//   connector, on the
//   acceptor's greeting:    proof_c = HMAC(key, "hcomm-auth-1" | 'C' | nonce_c | nonce_a)
//   acceptor, once proof_c
//   checks out:             proof_a = HMAC(key, "hcomm-auth-1" | 'A' | nonce_c | nonce_a)
// Integers little-endian. The acceptor proves nothing before the connector has proven itself
// (it is no oracle for outsiders); the role byte keeps a proof from being reflected. A wrong
// magic, version or proof fails the handshake; the owner closes the connection. It does not
// protect against an attacker on the path who relays a whole handshake: that takes HCOMM_TLS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/job_key.hpp"

namespace hcomm::core {

class AuthHandshake {
 public:
  static constexpr uint32_t kMagic = 0x55414348;  // "HCAU" as it reads on the wire
  static constexpr uint32_t kVersion = 1;
  static constexpr size_t kNonceBytes = 32;
  static constexpr size_t kGreetingBytes = 8 + kNonceBytes;
  enum class Role : uint8_t { connector = 'C', acceptor = 'A' };

  /// Ready to run: output() holds the greeting. `key` must not be null.
  AuthHandshake(std::shared_ptr<const JobKey> key, Role role);

  /// Bytes to send, in order; the owner erases what it sent.
  std::string& output() { return out_; }
  /// How many bytes it still wants to read: the owner reads at most that many, so no byte of
  /// the protocol that follows is consumed. 0 once done or failed.
  size_t wanted() const;
  /// Takes received bytes; at most wanted() of them.
  void feed(const uint8_t* data, size_t size);

  /// Done: the peer proved it holds the key (and output() holds this side's last bytes).
  bool done() const { return state_ == State::done; }
  bool failed() const { return state_ == State::failed; }
  /// Why it failed, for the log line ("wrong job key", ...).
  const std::string& failure() const { return failure_; }

  /// True when `first4` (the first 4 bytes a peer sent) are a greeting's magic: lets a side
  /// without a key say why it refuses an authenticating peer.
  static bool is_greeting(const uint8_t* first4);

 private:
  enum class State { greeting, proof, done, failed };
  void on_greeting();
  void on_proof();
  void proof(Role of, JobKey::Mac out) const;
  void fail(std::string why);

  std::shared_ptr<const JobKey> key_;
  Role role_;
  State state_ = State::greeting;
  uint8_t nonce_[kNonceBytes];
  uint8_t peer_nonce_[kNonceBytes] = {};
  uint8_t in_[kGreetingBytes] = {};
  size_t got_ = 0;
  std::string out_;
  std::string failure_;
};

/// Logs a refused connection at WARN, once per remote address (thread-safe): an outsider's
/// retries do not flood the log.
void log_refused_connection(const char* what, const std::string& remote, const std::string& why);

}  // namespace hcomm::core
