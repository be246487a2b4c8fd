#include "transport/protocol_registry.hpp"

#include <algorithm>
#include <exception>
#include <mutex>

#include "core/log.hpp"
#include "transport/connection_protocol.hpp"

namespace hcomm::transport {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<RegisteredProtocol> protocols;  // kept sorted: most preferred first, then by name
  std::once_flag builtins;
};

// Function-local: another translation unit's static initialiser may register before this one's
// statics would have been constructed.
Registry& registry() {
  static Registry r;
  return r;
}

// Set while register_builtin_protocols() runs on this thread: its own register_protocol() calls
// must not wait for the call_once they are inside of.
thread_local bool adding_builtins = false;

Registry& ready_registry() {
  Registry& r = registry();
  if (!adding_builtins) {
    std::call_once(r.builtins, [] {
      adding_builtins = true;
      register_builtin_protocols();
      adding_builtins = false;
    });
  }
  return r;
}

bool before(const RegisteredProtocol& a, const RegisteredProtocol& b) {
  if (a.preference != b.preference) return a.preference > b.preference;
  return a.name < b.name;
}

std::string names_of(const std::vector<RegisteredProtocol>& protocols) {
  std::string names;
  for (const auto& p : protocols) names += (names.empty() ? "" : ", ") + p.name;
  return names.empty() ? "none" : names;
}

}  // namespace

std::vector<RegisteredProtocol> registered() {
  Registry& r = ready_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.protocols;
}

Expected<std::unique_ptr<LinkProtocol>> make_protocol(const RegisteredProtocol& entry) {
  // Outside the registry's lock: an application's factory may itself look at the registry.
  std::unique_ptr<LinkProtocol> protocol;
  try {
    protocol = entry.factory();
  } catch (const std::exception& e) {
    return Status{HCOMM_ERR_INVALID_ARG,
                  "the factory of protocol '" + entry.name + "' threw: " + e.what()};
  } catch (...) {
    return Status{HCOMM_ERR_INVALID_ARG, "the factory of protocol '" + entry.name + "' threw"};
  }
  if (!protocol)
    return Status{HCOMM_ERR_INVALID_ARG,
                  "the factory of protocol '" + entry.name + "' returned null"};
  return protocol;
}

Expected<std::unique_ptr<LinkProtocol>> make_protocol(const std::string& name) {
  RegisteredProtocol entry;
  {
    Registry& r = ready_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = std::find_if(r.protocols.begin(), r.protocols.end(),
                           [&](const RegisteredProtocol& p) { return p.name == name; });
    if (it == r.protocols.end())
      return Status{HCOMM_ERR_INVALID_ARG,
                    "no transport protocol named '" + name +
                        "' is registered (registered: " + names_of(r.protocols) +
                        "): check HCOMM_TRANSPORT, or register it with HCOMM_REGISTER_PROTOCOL "
                        "before creating the communicator"};
    entry = *it;
  }
  return make_protocol(entry);
}

bool register_link_protocol(const std::string& name, LinkProtocolFactory factory, int preference) {
  if (name.empty() || !factory) {
    HCOMM_LOG(warn, core::log::kNet,
              "register_protocol: a protocol needs a name and a factory ('%s')", name.c_str());
    return false;
  }
  auto& r = ready_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& p : r.protocols) {
    if (p.name == name) {
      HCOMM_LOG(warn, core::log::kNet,
                "register_protocol: '%s' is already registered; kept the first", name.c_str());
      return false;
    }
  }
  RegisteredProtocol entry{name, preference, std::move(factory)};
  auto at = std::upper_bound(r.protocols.begin(), r.protocols.end(), entry, before);
  r.protocols.insert(at, std::move(entry));
  return true;
}

}  // namespace hcomm::transport

namespace hcomm {

bool register_protocol(const std::string& name, ProtocolFactory factory, int preference) {
  if (!factory) return transport::register_link_protocol(name, nullptr, preference);
  return transport::register_link_protocol(
      name,
      [name, factory = std::move(factory)]() -> std::unique_ptr<transport::LinkProtocol> {
        std::unique_ptr<Protocol> protocol = factory();
        if (!protocol) return nullptr;
        return std::make_unique<transport::ConnectionProtocol>(name, std::move(protocol));
      },
      preference);
}

std::vector<std::string> registered_protocols() {
  std::vector<std::string> names;
  for (auto& p : transport::registered()) names.push_back(std::move(p.name));
  return names;
}

Expected<ProtocolCaps> protocol_caps(const std::string& name) {
  auto protocol = transport::make_protocol(name);
  if (!protocol) return protocol.status();
  return protocol.value()->caps();
}

}  // namespace hcomm
