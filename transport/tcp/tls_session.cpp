#include "transport/tcp/tls_session.hpp"

#include <openssl/err.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/errno_text.hpp"

namespace hcomm::transport::tcp {
namespace {
// A piece at least this long is encrypted from its own buffer; shorter ones (frame headers,
// small payloads) are gathered into one record of at most kRecordBytes.
constexpr size_t kDirectBytes = 4096;
constexpr size_t kRecordBytes = 16384;  // TLS's largest record payload
}  // namespace

TlsSession::TlsSession(const TlsContext& context, TlsContext::Role role, int fd) {
  ssl_ = context.new_connection(role);
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd) != 1) {
    error_ = "OpenSSL cannot make a TLS connection: " + take_openssl_errors("no reason given");
    return;
  }
  client_ = role == TlsContext::Role::client;
  if (client_) {
    SSL_set_connect_state(ssl_);
    SSL_set_app_data(ssl_, &accepted_);
  } else {
    SSL_set_accept_state(ssl_);
  }
  gather_.reserve(kRecordBytes);
}

TlsSession::~TlsSession() {
  SSL_free(ssl_);
}

TlsSession::Result TlsSession::result_of(int ret, const char* what) {
  const int saved_errno = errno;
  const int err = SSL_get_error(ssl_, ret);
  wants_write_ = err == SSL_ERROR_WANT_WRITE;
  switch (err) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return Result::would_block;
    case SSL_ERROR_ZERO_RETURN:
      return Result::closed;
    case SSL_ERROR_SYSCALL:
      if (ERR_peek_error() == 0) {
        if (saved_errno == 0) return Result::closed;  // end of stream
        socket_errno_ = saved_errno;
        error_ = core::errno_text(what, saved_errno);
        return Result::failed;
      }
      [[fallthrough]];
    default:
      socket_errno_ = 0;
      error_ = std::string(what) + ": " + take_openssl_errors("TLS error " + std::to_string(err));
      return Result::failed;
  }
}

TlsSession::Result TlsSession::handshake() {
  if (established_) return Result::ok;
  if (ssl_ == nullptr) return Result::failed;
  ERR_clear_error();
  if (!handshake_done_) {
    const int ret = SSL_do_handshake(ssl_);
    if (ret != 1) return handshake_result(result_of(ret, "the TLS handshake"));
    handshake_done_ = true;
  }
  if (client_ && !accepted_) {
    // Reads what the server sent after checking us (its ticket sets accepted_; an alert fails);
    // application data the server sent first stays for read().
    char byte;
    size_t got = 0;
    ERR_clear_error();
    if (SSL_peek_ex(ssl_, &byte, 1, &got) == 1) {
      accepted_ = true;
    } else if (!accepted_) {
      return handshake_result(result_of(0, "the TLS handshake"));
    }
  }
  established_ = true;
  wants_write_ = false;
  return Result::ok;
}

TlsSession::Result TlsSession::handshake_result(Result r) {
  if (r == Result::closed) {
    error_ = "the peer closed the connection during the TLS handshake";
    return Result::failed;
  }
  return r;
}

bool TlsSession::has_pending() const {
  return ssl_ != nullptr && SSL_has_pending(ssl_) == 1;
}

TlsSession::Result TlsSession::read(void* buf, size_t len, size_t* got) {
  ERR_clear_error();
  if (SSL_read_ex(ssl_, buf, len, got) == 1) {
    wants_write_ = false;
    return Result::ok;
  }
  return result_of(0, "a TLS read");
}

TlsSession::Result TlsSession::write(const iovec* iov, int n_iov, size_t* put) {
  *put = 0;
  // Stops at the first piece the socket does not take whole; the caller comes back with the
  // same bytes first (what a would_block retry needs).
  auto send = [&](const char* data, size_t len, bool* whole) {
    size_t off = 0;
    while (off < len) {
      size_t w = 0;
      ERR_clear_error();
      if (SSL_write_ex(ssl_, data + off, len - off, &w) != 1) {
        *put += off;
        *whole = false;
        return result_of(0, "a TLS write");
      }
      off += w;
    }
    *put += off;
    *whole = true;
    return Result::ok;
  };
  int i = 0;
  while (i < n_iov) {
    bool whole = false;
    Result r;
    if (iov[i].iov_len >= kDirectBytes) {
      r = send(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len, &whole);
      ++i;
    } else {
      gather_.clear();
      bool cut = false;
      while (i < n_iov && iov[i].iov_len < kDirectBytes && gather_.size() < kRecordBytes) {
        const size_t take = std::min(iov[i].iov_len, kRecordBytes - gather_.size());
        const char* p = static_cast<const char*>(iov[i].iov_base);
        gather_.insert(gather_.end(), p, p + take);
        if (take < iov[i].iov_len) {
          cut = true;  // the record is full: the rest of this piece goes next call
          break;
        }
        ++i;
      }
      r = send(gather_.data(), gather_.size(), &whole);
      if (cut && whole) return Result::ok;
    }
    if (r != Result::ok || !whole) return *put > 0 ? Result::ok : r;
  }
  wants_write_ = false;
  return Result::ok;
}

void TlsSession::close_notify() {
  if (!established_) return;
  ERR_clear_error();
  SSL_shutdown(ssl_);
  ERR_clear_error();
}

}  // namespace hcomm::transport::tcp
