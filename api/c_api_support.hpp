// What the C API (include/hcomm/hcomm.h) is built on: the handle tables, the per-thread last
// error, the guard that keeps every C++ exception inside the library, and the checks of C
// arguments (enum values, output pointers) before they become C++ ones.
//
// Handles are numbers, not pointers: each kind has a table from number to object, and numbers
// are never reused, so a handle that was freed, never made, or of another kind is found in no
// table and refused instead of being dereferenced. Any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "hcomm/communicator.hpp"
#include "hcomm/hcomm.h"
#include "hcomm/status.hpp"
#include "hcomm/types.hpp"
#include "hcomm/work.hpp"

namespace hcomm::api::c {

/// The objects behind the C handles.
struct CommObject {
  std::shared_ptr<Communicator> comm;
};
struct WorkObject {
  Work work;
  std::chrono::milliseconds op_timeout;  ///< its communicator's, for a negative timeout
};
struct ContextObject {
  bool has_comm = false;             ///< opened on a communicator
  std::weak_ptr<Communicator> comm;  ///< expired once hcomm_comm_destroy() ran
};
struct MemoryObject {
  void* addr = nullptr;
  size_t size = 0;
};

/// The int a C caller passed as one of the API's enums, read as its bytes: callers may pass any
/// int (a value outside the enum is to be rejected), and loading one outside the enum's range
/// as the enum type is undefined in C++. So the enums travel by reference until read here.
template <class Enum>
int raw_enum(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "the C enums are int-sized");
  int raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

/// The next handle number of any kind (odd, so no handle equals a small integer or a pointer).
uintptr_t next_handle_number();

/// Objects of one kind by handle number.
template <class T>
class HandleTable {
 public:
  uintptr_t add(std::shared_ptr<T> object) {
    const uintptr_t n = next_handle_number();
    std::lock_guard<std::mutex> lock(mutex_);
    objects_.emplace(n, std::move(object));
    return n;
  }
  /// Null when `n` is no live handle of this kind.
  std::shared_ptr<T> find(uintptr_t n) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = objects_.find(n);
    return it == objects_.end() ? nullptr : it->second;
  }
  /// The object, no longer in the table; null when `n` is no live handle of this kind.
  std::shared_ptr<T> remove(uintptr_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = objects_.find(n);
    if (it == objects_.end()) return nullptr;
    std::shared_ptr<T> object = std::move(it->second);
    objects_.erase(it);
    return object;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<uintptr_t, std::shared_ptr<T>> objects_;
};

HandleTable<CommObject>& comms();
HandleTable<WorkObject>& works();
HandleTable<ContextObject>& contexts();
HandleTable<MemoryObject>& memories();

template <class Handle>
uintptr_t number_of(Handle h) {
  return reinterpret_cast<uintptr_t>(h);
}
template <class Handle>
Handle handle_of(uintptr_t n) {
  return reinterpret_cast<Handle>(n);
}

/// Records `status` as this thread's last error when it failed; returns its code.
hcomm_status_t report(const Status& status);
/// report() of HCOMM_ERR_INVALID_ARG with "`what`: `message`".
hcomm_status_t invalid(const char* what, const std::string& message);

/// Runs `body` (returning an hcomm_status_t); an exception becomes HCOMM_ERR_INTERNAL.
template <class Body>
hcomm_status_t guarded(const char* what, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    return report({HCOMM_ERR_INTERNAL, std::string(what) + ": " + e.what()});
  } catch (...) {
    return report({HCOMM_ERR_INTERNAL, std::string(what) + ": an unknown exception"});
  }
}

/// The communicator behind `h`, or null after reporting why there is none.
std::shared_ptr<Communicator> comm_of(const char* what, hcomm_comm_t h);
/// The C value as a C++ one; HCOMM_ERR_INVALID_ARG when it is outside its enum.
Expected<DataType> to_dtype(const char* what, const hcomm_datatype_t& value);
Expected<ReduceOp> to_redop(const char* what, const hcomm_redop_t& value);

/// A blocking call: `body(Communicator&)` returns the Status to report.
template <class Body>
hcomm_status_t blocking(const char* what, hcomm_comm_t h, Body&& body) noexcept {
  return guarded(what, [&]() -> hcomm_status_t {
    auto c = comm_of(what, h);
    if (!c) return HCOMM_ERR_INVALID_ARG;
    return report(body(*c));
  });
}

/// A non-blocking call: `body(Communicator&)` returns Expected<Work>, which becomes *out.
template <class Body>
hcomm_status_t nonblocking(const char* what, hcomm_comm_t h, hcomm_work_t* out,
                           Body&& body) noexcept {
  return guarded(what, [&]() -> hcomm_status_t {
    if (out == nullptr) return invalid(what, "work is NULL");
    *out = nullptr;
    auto c = comm_of(what, h);
    if (!c) return HCOMM_ERR_INVALID_ARG;
    Expected<Work> work = body(*c);
    if (!work.ok()) return report(work.status());
    auto object = std::make_shared<WorkObject>();
    object->work = std::move(work.value());
    object->op_timeout = c->config().op_timeout;
    *out = handle_of<hcomm_work_t>(works().add(std::move(object)));
    return HCOMM_SUCCESS;
  });
}

}  // namespace hcomm::api::c
