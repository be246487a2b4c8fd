// The C API's device context, memory registration and QoS (include/hcomm/hcomm.h): the articles'
// dev_ctx calls over hcomm::register_memory() and Communicator::set_qos().
#include <map>

#include "api/c_api_support.hpp"
#include "hcomm/memory.hpp"
#include "hcomm/qos.hpp"

using namespace hcomm::api::c;
using hcomm::Communicator;
using hcomm::QosClass;

namespace {

constexpr int kAccessFlags =
    HCOMM_ACCESS_LOCAL_WRITE | HCOMM_ACCESS_REMOTE_WRITE | HCOMM_ACCESS_REMOTE_READ;

/// The ranges registered through hcomm_reg_mem, by address. hcomm::register_memory() keeps one
/// registration per address, so the handles of one range share it (the last one's
/// hcomm_dereg_mem ends it) and another size at a registered address is refused. Never
/// destroyed, as the handle tables.
struct Registered {
  size_t size = 0;
  int handles = 0;
};
struct Registrations {
  std::mutex mutex;
  std::map<const void*, Registered> by_addr;
};
Registrations& registrations() {
  static auto* r = new Registrations;
  return *r;
}

std::shared_ptr<ContextObject> context_of(const char* what, hcomm_ctx_t h) {
  if (h == nullptr) {
    invalid(what, "the context is NULL");
    return nullptr;
  }
  auto object = contexts().find(number_of(h));
  if (!object) invalid(what, "not a context handle (closed already, or never opened)");
  return object;
}

/// The communicator of a context opened on one; null (reported) for any other.
std::shared_ptr<Communicator> communicator_of(const char* what, hcomm_ctx_t h) {
  auto ctx = context_of(what, h);
  if (!ctx) return nullptr;
  if (!ctx->has_comm) {
    invalid(what,
            "the context was opened without a communicator: open it with "
            "hcomm_ctx_open(comm, &ctx) to set the communicator's class");
    return nullptr;
  }
  auto comm = ctx->comm.lock();
  if (!comm) invalid(what, "the context's communicator was destroyed");
  return comm;
}

}  // namespace

extern "C" {

hcomm_status_t hcomm_ctx_open(hcomm_comm_t comm, hcomm_ctx_t* ctx) {
  return guarded("hcomm_ctx_open", [&] {
    if (ctx == nullptr) return invalid("hcomm_ctx_open", "ctx is NULL");
    *ctx = nullptr;
    auto object = std::make_shared<ContextObject>();
    if (comm != nullptr) {
      auto c = comm_of("hcomm_ctx_open", comm);
      if (!c) return HCOMM_ERR_INVALID_ARG;
      object->has_comm = true;
      object->comm = c;
    }
    *ctx = handle_of<hcomm_ctx_t>(contexts().add(std::move(object)));
    return HCOMM_SUCCESS;
  });
}

hcomm_status_t hcomm_ctx_close(hcomm_ctx_t ctx) {
  return guarded("hcomm_ctx_close", [&] {
    if (ctx == nullptr) return invalid("hcomm_ctx_close", "the context is NULL");
    if (!contexts().remove(number_of(ctx)))
      return invalid("hcomm_ctx_close", "not a context handle (closed already?)");
    return HCOMM_SUCCESS;
  });
}

hcomm_status_t hcomm_reg_mem(hcomm_ctx_t ctx, void* addr, size_t size, int access, hcomm_mr_t* mr) {
  const char* what = "hcomm_reg_mem";
  return guarded(what, [&] {
    if (mr == nullptr) return invalid(what, "mr is NULL");
    *mr = nullptr;
    if (!context_of(what, ctx)) return HCOMM_ERR_INVALID_ARG;
    if (addr == nullptr || size == 0)
      return invalid(what, "addr must not be NULL and size not 0 (a registration needs memory)");
    if ((access & ~kAccessFlags) != 0 || (access & HCOMM_ACCESS_LOCAL_WRITE) == 0)
      return invalid(what,
                     "access " + std::to_string(access) +
                         " is refused: include HCOMM_ACCESS_LOCAL_WRITE, and no flag "
                         "besides it, HCOMM_ACCESS_REMOTE_WRITE and HCOMM_ACCESS_REMOTE_READ");
    auto& reg = registrations();
    std::lock_guard<std::mutex> lock(reg.mutex);
    auto it = reg.by_addr.find(addr);
    if (it != reg.by_addr.end() && it->second.size != size)
      return invalid(what, "the memory at this address is registered already with " +
                               std::to_string(it->second.size) + " bytes, not " +
                               std::to_string(size) + ": hcomm_dereg_mem() that first");
    if (it == reg.by_addr.end()) {
      hcomm::Status st = hcomm::register_memory(addr, size);
      if (!st.ok()) return report(st);
      it = reg.by_addr.emplace(addr, Registered{size, 0}).first;
    }
    ++it->second.handles;
    auto object = std::make_shared<MemoryObject>();
    object->addr = addr;
    object->size = size;
    *mr = handle_of<hcomm_mr_t>(memories().add(std::move(object)));
    return HCOMM_SUCCESS;
  });
}

hcomm_status_t hcomm_dereg_mem(hcomm_mr_t mr) {
  return guarded("hcomm_dereg_mem", [&] {
    if (mr == nullptr) return invalid("hcomm_dereg_mem", "mr is NULL");
    auto object = memories().remove(number_of(mr));
    if (!object)
      return invalid("hcomm_dereg_mem", "not a registration handle (deregistered already?)");
    auto& reg = registrations();
    std::lock_guard<std::mutex> lock(reg.mutex);
    auto it = reg.by_addr.find(object->addr);
    if (it != reg.by_addr.end() && --it->second.handles > 0) return HCOMM_SUCCESS;
    if (it != reg.by_addr.end()) reg.by_addr.erase(it);
    return report(hcomm::deregister_memory(object->addr, object->size));
  });
}

hcomm_status_t hcomm_set_qos(hcomm_ctx_t ctx, const hcomm_qos_config_t* qos) {
  const char* what = "hcomm_set_qos";
  return guarded(what, [&] {
    if (qos == nullptr) return invalid(what, "qos is NULL");
    auto comm = communicator_of(what, ctx);
    if (!comm) return HCOMM_ERR_INVALID_ARG;
    QosClass q;
    q.min_rate = qos->min_rate;
    q.max_rate = qos->max_rate;
    q.priority = qos->priority;
    return report(comm->set_qos(q));
  });
}

hcomm_status_t hcomm_get_qos(hcomm_ctx_t ctx, hcomm_qos_config_t* qos) {
  const char* what = "hcomm_get_qos";
  return guarded(what, [&] {
    if (qos == nullptr) return invalid(what, "qos is NULL");
    auto comm = communicator_of(what, ctx);
    if (!comm) return HCOMM_ERR_INVALID_ARG;
    const QosClass q = comm->qos();
    qos->min_rate = q.min_rate;
    qos->max_rate = q.max_rate;
    qos->priority = q.priority;
    return HCOMM_SUCCESS;
  });
}

}  // extern "C"
