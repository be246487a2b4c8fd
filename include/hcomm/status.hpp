// hcomm public API: status codes and the Status value every call returns.
//
// Errors are values: no hcomm call throws. A Status carries a code an application can branch on
// and a message written for the person reading the log: what happened and what to do about it.
#pragma once

#include <string>
#include <utility>

namespace hcomm {

enum StatusCode : int {
  HCOMM_SUCCESS = 0,
  HCOMM_ERR_INVALID_ARG = 1,  ///< a caller error: null buffer, bad type/op, rank out of range, ...
  HCOMM_ERR_NO_DEVICE = 2,    ///< the requested transport's device is not present
  HCOMM_ERR_OUT_OF_MEM = 3,   ///< an allocation of communication memory failed
  HCOMM_ERR_MMAP = 4,         ///< mapping or pinning memory failed (check `ulimit -l`)
  HCOMM_ERR_TIMEOUT = 5,      ///< a deadline passed (joining, connecting, waiting)
  HCOMM_ERR_PEER_LOST = 6,    ///< a peer process is gone; operations involving it cannot finish
  HCOMM_ERR_TRANSPORT = 7,    ///< a link failed with an I/O error
  HCOMM_ERR_ABORTED = 8,      ///< the operation was cancelled (communicator destroyed or aborted)
  HCOMM_ERR_INTERNAL = 9,     ///< a bug in hcomm; please report it with HCOMM_DEBUG=INFO output
};

/// The symbolic name of a code, e.g. "HCOMM_ERR_TIMEOUT".
const char* status_code_name(StatusCode code);

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == HCOMM_SUCCESS; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "HCOMM_ERR_TIMEOUT: <message>", or "HCOMM_SUCCESS".
  std::string to_string() const;

 private:
  StatusCode code_ = HCOMM_SUCCESS;
  std::string message_;
};

/// A value or the Status that explains why there is none.
template <class T>
class Expected {
 public:
  Expected(T value) : value_(std::move(value)) {}        // NOLINT: implicit by design
  Expected(Status error) : status_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  explicit operator bool() const { return ok(); }
  const Status& status() const { return status_; }
  T& value() { return value_; }
  const T& value() const { return value_; }
  T& operator*() { return value_; }
  T* operator->() { return &value_; }

 private:
  T value_{};
  Status status_;
};

}  // namespace hcomm
