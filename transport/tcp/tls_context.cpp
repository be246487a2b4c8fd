#include "transport/tcp/tls_context.hpp"

#include <openssl/err.h>

#include <cstring>

#include "core/config_vars.hpp"

namespace hcomm::transport::tcp {
namespace {

// The identity both sides name the pre-shared key by, and the label it is derived with.
constexpr unsigned char kPskIdentity[] = "hcomm-job-key";
constexpr size_t kPskIdentityBytes = sizeof(kPskIdentity) - 1;
constexpr char kPskLabel[] = "hcomm TLS 1.3 external PSK, v1";
// TLS_AES_128_GCM_SHA256, the cipher suite the pre-shared key is bound to.
constexpr unsigned char kPskCipher[] = {0x13, 0x01};

const TlsContext* context_of(SSL* ssl) {
  return static_cast<const TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
}

Status config_error(const std::string& what) {
  return Status{HCOMM_ERR_INVALID_ARG, what};
}

}  // namespace

std::string take_openssl_errors(const std::string& fallback) {
  std::string text;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!text.empty()) text += "; ";
    text += buf;
  }
  return text.empty() ? fallback : text;
}

Expected<std::shared_ptr<TlsContext>> TlsContext::make_contexts() {
  std::shared_ptr<TlsContext> self(new TlsContext());
  self->client_ = SSL_CTX_new(TLS_client_method());
  self->server_ = SSL_CTX_new(TLS_server_method());
  if (self->client_ == nullptr || self->server_ == nullptr)
    return Status{HCOMM_ERR_INTERNAL,
                  "OpenSSL cannot make a TLS context: " + take_openssl_errors("no reason given")};
  for (SSL_CTX* ctx : {self->client_, self->server_}) {
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    // Sends resume where they stopped, from the caller's buffer wherever it now is.
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // A link half-closes its socket after its last frame: an end of stream, not an attack.
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_app_data(ctx, self.get());
  }
  // In TLS 1.3 the client's handshake ends before the server has checked the client (its
  // certificate): the one ticket the server sends after that check is the client's proof that
  // it was accepted (TlsSession waits for it). Tickets are never used to resume.
  SSL_CTX_set_num_tickets(self->server_, 1);
  SSL_CTX_set_session_cache_mode(self->client_,
                                 SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(self->client_, &TlsContext::on_ticket);
  return self;
}

TlsContext::~TlsContext() {
  SSL_CTX_free(client_);
  SSL_CTX_free(server_);
  OPENSSL_cleanse(psk_, sizeof(psk_));
}

Expected<std::shared_ptr<const TlsContext>> TlsContext::from_environment(
    std::shared_ptr<const core::JobKey> key) {
  using core::Var;
  bool on = false;
  if (auto text = core::env_text(Var::tls)) {
    auto flag = core::parse_flag_var(core::config_var(Var::tls), *text);
    if (!flag.ok()) return flag.status();
    on = flag.value();
  }
  if (!on) return std::shared_ptr<const TlsContext>();
  const auto cert = core::env_text(Var::tls_cert_file);
  if (cert) {
    const auto private_key = core::env_text(Var::tls_key_file);
    const auto ca = core::env_text(Var::tls_ca_file);
    if (!private_key || !ca)
      return config_error(
          "HCOMM_TLS_CERT_FILE is set without HCOMM_TLS_KEY_FILE and HCOMM_TLS_CA_FILE: give "
          "the certificate's private key and the CA that signs every rank's certificate");
    return with_certificates(*cert, *private_key, *ca);
  }
  if (!key)
    return config_error(
        "HCOMM_TLS=1 needs keys: set HCOMM_JOB_KEY (hcomm-run makes one), or "
        "HCOMM_TLS_CERT_FILE, HCOMM_TLS_KEY_FILE and HCOMM_TLS_CA_FILE, on every rank");
  return with_job_key(std::move(key));
}

Expected<std::shared_ptr<const TlsContext>> TlsContext::with_job_key(
    std::shared_ptr<const core::JobKey> key) {
  auto made = make_contexts();
  if (!made.ok()) return made.status();
  std::shared_ptr<TlsContext> self = std::move(made.value());
  self->psk_mode_ = true;
  static_assert(kPskBytes == core::JobKey::kMacBytes, "the PSK is one HMAC-SHA256");
  key->mac(kPskLabel, sizeof(kPskLabel) - 1, self->psk_);
  // The key is bound to SHA-256: only suites with that hash can use it (AES-GCM first: the
  // CPU's AES instructions make it the fastest).
  for (SSL_CTX* ctx : {self->client_, self->server_})
    SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256");
  SSL_CTX_set_psk_use_session_callback(self->client_, &TlsContext::use_psk);
  SSL_CTX_set_psk_find_session_callback(self->server_, &TlsContext::find_psk);
  return std::shared_ptr<const TlsContext>(std::move(self));
}

Expected<std::shared_ptr<const TlsContext>> TlsContext::with_certificates(const std::string& cert,
                                                                          const std::string& key,
                                                                          const std::string& ca) {
  auto made = make_contexts();
  if (!made.ok()) return made.status();
  std::shared_ptr<TlsContext> self = std::move(made.value());
  for (SSL_CTX* ctx : {self->client_, self->server_}) {
    if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1)
      return config_error("HCOMM_TLS_CERT_FILE='" + cert + "' does not load as a PEM " +
                          "certificate chain: " + take_openssl_errors("no reason given"));
    if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1)
      return config_error("HCOMM_TLS_KEY_FILE='" + key + "' is not the PEM private key of " +
                          "HCOMM_TLS_CERT_FILE: " + take_openssl_errors("no reason given"));
    if (SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) != 1)
      return config_error("HCOMM_TLS_CA_FILE='" + ca + "' does not load as PEM certificates: " +
                          take_openssl_errors("no reason given"));
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return std::shared_ptr<const TlsContext>(std::move(self));
}

SSL* TlsContext::new_connection(Role role) const {
  return SSL_new(role == Role::client ? client_ : server_);
}

SSL_SESSION* TlsContext::psk_session(SSL* ssl) const {
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kPskCipher);
  if (cipher == nullptr) return nullptr;
  SSL_SESSION* session = SSL_SESSION_new();
  if (session == nullptr || SSL_SESSION_set1_master_key(session, psk_, kPskBytes) != 1 ||
      SSL_SESSION_set_cipher(session, cipher) != 1 ||
      SSL_SESSION_set_protocol_version(session, TLS1_3_VERSION) != 1) {
    SSL_SESSION_free(session);
    return nullptr;
  }
  return session;
}

int TlsContext::use_psk(SSL* ssl, const EVP_MD* md, const unsigned char** id, size_t* id_len,
                        SSL_SESSION** session) {
  SSL_SESSION* s = context_of(ssl)->psk_session(ssl);
  if (s == nullptr) return 0;
  if (md != nullptr && SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(s)) != md) {
    SSL_SESSION_free(s);  // a retried handshake with another hash: no PSK fits it
    *session = nullptr;
    *id = nullptr;
    *id_len = 0;
    return 1;
  }
  *id = kPskIdentity;
  *id_len = kPskIdentityBytes;
  *session = s;
  return 1;
}

int TlsContext::on_ticket(SSL* ssl, SSL_SESSION*) {
  if (auto* accepted = static_cast<bool*>(SSL_get_app_data(ssl))) *accepted = true;
  return 0;  // not kept
}

int TlsContext::find_psk(SSL* ssl, const unsigned char* id, size_t id_len, SSL_SESSION** session) {
  *session = nullptr;
  if (id_len != kPskIdentityBytes || std::memcmp(id, kPskIdentity, id_len) != 0) return 1;
  *session = context_of(ssl)->psk_session(ssl);
  return *session != nullptr ? 1 : 0;
}

}  // namespace hcomm::transport::tcp
