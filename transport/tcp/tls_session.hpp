// One TCP connection's TLS state (tls_context.hpp): the non-blocking handshake, then reads and
// writes in place of recv() and sendmsg(). Engine thread only, like the stream that owns it.
//
// Failure semantics: every call returns would_block (retry when the socket is ready: readable,
// or writable when wants_write()), closed (the peer's end of stream), failed (error() says why;
// the connection is unusable) or ok. After would_block a write must be retried with the same
// bytes first (the stream's queue keeps them in order, so it does).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "transport/tcp/tls_context.hpp"

namespace hcomm::transport::tcp {

class TlsSession {
 public:
  enum class Result { ok, would_block, closed, failed };

  /// A session for the connected socket `fd` (not owned); failed() at once when OpenSSL cannot
  /// make one.
  TlsSession(const TlsContext& context, TlsContext::Role role, int fd);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  /// Advances the handshake; ok once it is done (also on every later call). A client is done
  /// only once the server has accepted it (its certificate too), not when its own half ends.
  Result handshake();
  bool established() const { return established_; }
  /// The last call stopped because the socket must become writable (not readable).
  bool wants_write() const { return wants_write_; }
  /// Decrypted bytes that are buffered here, not in the socket: read them before waiting.
  bool has_pending() const;
  const std::string& error() const { return error_; }
  /// For a failure of the socket itself (a reset, ...): its errno; 0 for a TLS failure.
  int socket_errno() const { return socket_errno_; }

  /// Reads up to `len` bytes into `buf`; `*got` is set when ok.
  Result read(void* buf, size_t len, size_t* got);
  /// Writes the bytes of `iov` in order: small pieces gathered into records, large ones
  /// encrypted straight from their buffers; `*put` is how many were taken (ok: at least one).
  Result write(const iovec* iov, int n_iov, size_t* put);
  /// Sends the close_notify alert if the socket takes it now (best effort, before a half-close).
  void close_notify();

 private:
  Result result_of(int ret, const char* what);
  /// A handshake step's result: an end of stream there is a failure.
  Result handshake_result(Result r);

  SSL* ssl_ = nullptr;
  bool client_ = false;
  bool handshake_done_ = false;  // SSL_do_handshake finished
  bool accepted_ = false;        // client: the server's ticket (or data) arrived after it
  bool established_ = false;
  bool wants_write_ = false;
  std::string error_;
  int socket_errno_ = 0;
  std::vector<char> gather_;  // small pieces of one record, kept until written
};

}  // namespace hcomm::transport::tcp
