// Encryption of TCP links (HCOMM_TLS=1): TLS 1.3 through OpenSSL, for the data and fallback
// links a TcpProtocol makes (reconnections included). The connecting side of a connection is the
// TLS client, the accepting side the server; the handshake runs after the job-key handshake and
// the Hello, on the stream itself (tcp_stream.hpp).
//
// Keys, one of:
//   - a pre-shared key derived from the job's secret (HMAC-SHA256 of the secret with a fixed
//     label; TLS 1.3 PSK with ephemeral ECDHE, so a later leak of the secret does not decrypt
//     recorded traffic): every rank of the job has it, no files needed. The default.
//   - X.509 certificates (HCOMM_TLS_CERT_FILE, HCOMM_TLS_KEY_FILE, HCOMM_TLS_CA_FILE): each side
//     presents its chain, and each verifies the other's against the CA (ranks connect by
//     address, so names are not checked: the CA is the job's trust root).
//
// Immutable once made; shared by every link of a process (SSL objects are made per connection).
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/job_key.hpp"
#include "hcomm/status.hpp"

namespace hcomm::transport::tcp {

class TlsContext {
 public:
  enum class Role { client, server };

  /// What HCOMM_TLS and HCOMM_TLS_*_FILE say: null when HCOMM_TLS is 0 or unset; an error when
  /// it is 1 and neither `key` (the job key) nor certificate files are given, or the files do
  /// not load.
  static Expected<std::shared_ptr<const TlsContext>> from_environment(
      std::shared_ptr<const core::JobKey> key);
  /// The pre-shared-key mode over `key` (not null).
  static Expected<std::shared_ptr<const TlsContext>> with_job_key(
      std::shared_ptr<const core::JobKey> key);
  /// The certificate mode: PEM files of this side's chain, its private key, and the CA.
  static Expected<std::shared_ptr<const TlsContext>> with_certificates(const std::string& cert,
                                                                       const std::string& key,
                                                                       const std::string& ca);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  /// A new connection's TLS state for `role` (the caller owns it: SSL_free); null when OpenSSL
  /// cannot make one. A client's app data may point to a bool, set once the server accepted it.
  SSL* new_connection(Role role) const;
  /// "a key derived from the job key" or "certificates": for log lines.
  const char* keys() const { return psk_mode_ ? "a key derived from the job key" : "certificates"; }

  static constexpr size_t kPskBytes = 32;

 private:
  TlsContext() = default;
  static Expected<std::shared_ptr<TlsContext>> make_contexts();
  static int use_psk(SSL* ssl, const EVP_MD* md, const unsigned char** id, size_t* id_len,
                     SSL_SESSION** session);
  static int find_psk(SSL* ssl, const unsigned char* id, size_t id_len, SSL_SESSION** session);
  /// A client's connection got the server's ticket: sets the bool its app data points to.
  static int on_ticket(SSL* ssl, SSL_SESSION* session);
  SSL_SESSION* psk_session(SSL* ssl) const;

  SSL_CTX* client_ = nullptr;
  SSL_CTX* server_ = nullptr;
  bool psk_mode_ = false;
  uint8_t psk_[kPskBytes] = {};
};

/// OpenSSL's queued error messages, oldest first, joined (and the queue emptied); `fallback`
/// when there are none.
std::string take_openssl_errors(const std::string& fallback);

}  // namespace hcomm::transport::tcp
