#include "hcomm/status.hpp"

namespace hcomm {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case HCOMM_SUCCESS:
      return "HCOMM_SUCCESS";
    case HCOMM_ERR_INVALID_ARG:
      return "HCOMM_ERR_INVALID_ARG";
    case HCOMM_ERR_NO_DEVICE:
      return "HCOMM_ERR_NO_DEVICE";
    case HCOMM_ERR_OUT_OF_MEM:
      return "HCOMM_ERR_OUT_OF_MEM";
    case HCOMM_ERR_MMAP:
      return "HCOMM_ERR_MMAP";
    case HCOMM_ERR_TIMEOUT:
      return "HCOMM_ERR_TIMEOUT";
    case HCOMM_ERR_PEER_LOST:
      return "HCOMM_ERR_PEER_LOST";
    case HCOMM_ERR_TRANSPORT:
      return "HCOMM_ERR_TRANSPORT";
    case HCOMM_ERR_ABORTED:
      return "HCOMM_ERR_ABORTED";
    case HCOMM_ERR_INTERNAL:
      return "HCOMM_ERR_INTERNAL";
  }
  return "HCOMM_ERR_UNKNOWN";
}

std::string Status::to_string() const {
  if (ok()) return status_code_name(code_);
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace hcomm
