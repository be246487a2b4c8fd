// hcomm public API: status codes and the Status value every call returns.
//
// Errors are values: no hcomm call throws. A Status carries a code an application can branch on
// and a message written for the person reading the log: what happened and what to do about it.
#pragma once

#include <string>
#include <utility>

#include "hcomm/export.h"
#include "hcomm/status_codes.h"

namespace hcomm {

/// The codes of hcomm/status_codes.h, which C shares.
using StatusCode = ::hcomm_status_t;
using ::HCOMM_ERR_ABORTED;
using ::HCOMM_ERR_INTERNAL;
using ::HCOMM_ERR_INVALID_ARG;
using ::HCOMM_ERR_MMAP;
using ::HCOMM_ERR_NO_DEVICE;
using ::HCOMM_ERR_OUT_OF_MEM;
using ::HCOMM_ERR_PEER_LOST;
using ::HCOMM_ERR_TIMEOUT;
using ::HCOMM_ERR_TRANSPORT;
using ::HCOMM_SUCCESS;

/// The symbolic name of a code, e.g. "HCOMM_ERR_TIMEOUT".
HCOMM_API const char* status_code_name(StatusCode code);

class HCOMM_API Status {
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
