#include "api/c_api_support.hpp"

namespace hcomm::api::c {
namespace {

thread_local std::string last_error;

}  // namespace

uintptr_t next_handle_number() {
  static std::atomic<uintptr_t> next{0x1001};
  return next.fetch_add(2, std::memory_order_relaxed);
}

// The tables are never destroyed: what the application did not free stays as it is at exit,
// as a C++ Communicator that was never deleted does. Destroyed by exit's static destructors, a
// communicator left in the table would be torn down after the libraries it runs on (CAF's
// actor system) and corrupt the heap instead of letting the process exit with its status.
HandleTable<CommObject>& comms() {
  static auto* table = new HandleTable<CommObject>;
  return *table;
}
HandleTable<WorkObject>& works() {
  static auto* table = new HandleTable<WorkObject>;
  return *table;
}
HandleTable<ContextObject>& contexts() {
  static auto* table = new HandleTable<ContextObject>;
  return *table;
}
HandleTable<MemoryObject>& memories() {
  static auto* table = new HandleTable<MemoryObject>;
  return *table;
}

hcomm_status_t report(const Status& status) {
  if (!status.ok()) last_error = status.message();
  return status.code();
}

hcomm_status_t invalid(const char* what, const std::string& message) {
  return report({HCOMM_ERR_INVALID_ARG, std::string(what) + ": " + message});
}

std::shared_ptr<Communicator> comm_of(const char* what, hcomm_comm_t h) {
  if (h == nullptr) {
    invalid(what, "the communicator is NULL");
    return nullptr;
  }
  auto object = comms().find(number_of(h));
  if (!object) {
    invalid(what,
            "not a communicator handle (destroyed already, or never made by hcomm_comm_create)");
    return nullptr;
  }
  return object->comm;
}

Expected<DataType> to_dtype(const char* what, const hcomm_datatype_t& value) {
  const int v = raw_enum(value);
  if (v < 0 || v >= kNumDataTypes)
    return Status{HCOMM_ERR_INVALID_ARG, std::string(what) + ": invalid data type " +
                                             std::to_string(v) +
                                             " (use an hcomm_datatype_t value)"};
  return static_cast<DataType>(v);
}

Expected<ReduceOp> to_redop(const char* what, const hcomm_redop_t& value) {
  const int v = raw_enum(value);
  if (v < 0 || v >= kNumReduceOps)
    return Status{HCOMM_ERR_INVALID_ARG, std::string(what) + ": invalid reduce op " +
                                             std::to_string(v) + " (use an hcomm_redop_t value)"};
  return static_cast<ReduceOp>(v);
}

}  // namespace hcomm::api::c

extern "C" {

const char* hcomm_last_error(void) {
  return hcomm::api::c::last_error.c_str();
}

}  // extern "C"
