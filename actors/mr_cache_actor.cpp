// The mr_cache actors and the application's registrations (see mr_cache_actor.hpp).
#include "actors/mr_cache_actor.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/function_view.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <map>
#include <mutex>

#include "actors/messages.hpp"
#include "actors/runtime.hpp"
#include "core/log.hpp"
#include "transport/rdma/rdma_device.hpp"

namespace hcomm::actors {
namespace {

using transport::rdma::RdmaDevice;

constexpr const char* kPrefix = "mr_cache/";
// A registration pins pages (ibv_reg_mr): slow for large buffers, never minutes.
constexpr auto kReplyTimeout = std::chrono::seconds(60);

/// The application's registrations (address → bytes), for devices opened later.
std::mutex registrations_mutex;
std::map<uint64_t, uint64_t>& registrations() {
  static std::map<uint64_t, uint64_t> r;
  return r;
}

std::pair<int32_t, std::string> reply(const Status& st) {
  return {static_cast<int32_t>(st.code()), st.message()};
}

mr_cache_actor::behavior_type mr_cache(mr_cache_actor::pointer,
                                       std::shared_ptr<RdmaDevice> device) {
  return {
      [device](register_atom, uint64_t addr, uint64_t bytes) {
        auto [code, text] =
            reply(device->mr_cache().register_explicit(reinterpret_cast<const void*>(addr), bytes));
        return caf::make_result(code, text);
      },
      [device](deregister_atom, uint64_t addr, uint64_t bytes) {
        auto [code, text] = reply(
            device->mr_cache().deregister_explicit(reinterpret_cast<const void*>(addr), bytes));
        return caf::make_result(code, text);
      },
      [device](stats_atom) {
        const auto s = device->mr_cache().stats();
        return std::vector<uint64_t>{s.hits,          s.misses,       s.evictions,
                                     s.invalidations, s.pinned_bytes, s.entries};
      },
  };
}

/// Asks every device's actor to (de)register [addr, addr + bytes); the first failure is returned
/// with the devices that succeeded in `done`.
template <class Atom>
Status ask_all(Runtime& runtime, Atom atom, const void* addr, size_t bytes,
               std::vector<mr_cache_actor>* done) {
  for (auto& handle : runtime.process_actors(kPrefix)) {
    auto actor = caf::actor_cast<mr_cache_actor>(handle);
    auto view = caf::make_function_view(actor, caf::duration{kReplyTimeout});
    auto answer = view(atom, reinterpret_cast<uint64_t>(addr), static_cast<uint64_t>(bytes));
    if (!answer)
      return {HCOMM_ERR_INTERNAL,
              "the registration cache did not answer: " + runtime.system().render(answer.error())};
    Status st(static_cast<StatusCode>(std::get<0>(*answer)), std::get<1>(*answer));
    if (!st.ok()) return st;
    if (done != nullptr) done->push_back(actor);
  }
  return {};
}

}  // namespace

void attach_mr_caches(Runtime& runtime) {
  // Lock order: the registrations, then the runtime's actors (as register_memory()).
  std::lock_guard<std::mutex> lock(registrations_mutex);
  for (auto& device : RdmaDevice::opened()) {
    runtime.ensure_process_actor(kPrefix + device->name(), [&] {
      // A new device gets the registrations made so far before anyone can ask its actor.
      for (auto& [addr, bytes] : registrations()) {
        Status st =
            device->mr_cache().register_explicit(reinterpret_cast<const void*>(addr), bytes);
        if (!st.ok())
          HCOMM_LOG(warn, core::log::kNet, "%s: an earlier register_memory() does not apply: %s",
                    device->name().c_str(), st.to_string().c_str());
      }
      return caf::actor_cast<caf::actor>(runtime.system().spawn(mr_cache, device));
    });
  }
}

Status register_memory(const void* addr, size_t bytes) {
  if (addr == nullptr || bytes == 0)
    return {HCOMM_ERR_INVALID_ARG, "register_memory: a null pointer or an empty range"};
  // Serialised with the actors' start, which apply the list: every device sees each range once.
  std::lock_guard<std::mutex> lock(registrations_mutex);
  if (auto runtime = Runtime::current()) {
    std::vector<mr_cache_actor> done;
    Status st = ask_all(*runtime, register_atom::value, addr, bytes, &done);
    if (!st.ok()) {
      for (auto& actor : done) {
        auto view = caf::make_function_view(actor, caf::duration{kReplyTimeout});
        (void)view(deregister_atom::value, reinterpret_cast<uint64_t>(addr),
                   static_cast<uint64_t>(bytes));
      }
      return st;
    }
  }
  registrations()[reinterpret_cast<uint64_t>(addr)] = bytes;
  return {};
}

Status deregister_memory(const void* addr, size_t bytes) {
  std::lock_guard<std::mutex> lock(registrations_mutex);
  auto it = registrations().find(reinterpret_cast<uint64_t>(addr));
  if (it == registrations().end() || it->second != bytes)
    return {HCOMM_ERR_INVALID_ARG,
            "deregister_memory: no register_memory() of " + std::to_string(bytes) +
                " bytes at this address: pass the pointer and size that were registered"};
  registrations().erase(it);
  if (auto runtime = Runtime::current())
    return ask_all(*runtime, deregister_atom::value, addr, bytes, nullptr);
  return {};
}

MemoryRegistrationStats memory_registration_stats() {
  MemoryRegistrationStats out;
  auto runtime = Runtime::current();
  if (!runtime) return out;
  for (auto& handle : runtime->process_actors(kPrefix)) {
    auto view = caf::make_function_view(caf::actor_cast<mr_cache_actor>(handle),
                                        caf::duration{kReplyTimeout});
    auto s = view(stats_atom::value);
    if (!s || s->size() != 6) continue;
    out.hits += (*s)[0];
    out.misses += (*s)[1];
    out.evictions += (*s)[2];
    out.invalidations += (*s)[3];
    out.pinned_bytes += (*s)[4];
    out.entries += (*s)[5];
  }
  return out;
}

}  // namespace hcomm::actors
