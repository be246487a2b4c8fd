// The one registry of transport protocols (hcomm/protocol.hpp): hcomm's own and an application's,
// by name, each made as a LinkProtocol (an application's wrapped in a ConnectionProtocol).
// Communicator creation asks it which protocols exist, in order of preference, and for a fresh
// instance of each.
//
// Registration may happen from static initialisers of any translation unit
// (HCOMM_REGISTER_PROTOCOL) and from any thread: the registry is a function-local static behind a
// mutex. hcomm's built-in protocols are added on first use, before anything else, so an application
// cannot take their names.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <functional>

#include "hcomm/protocol.hpp"
#include "hcomm/status.hpp"
#include "transport/link_protocol.hpp"

namespace hcomm::transport {

using LinkProtocolFactory = std::function<std::unique_ptr<LinkProtocol>()>;

struct RegisteredProtocol {
  std::string name;
  int preference = 0;
  LinkProtocolFactory factory;
};

/// Every registered protocol, most preferred first; equal preferences by name.
std::vector<RegisteredProtocol> registered();

/// A fresh instance of `name`; HCOMM_ERR_INVALID_ARG listing the registered names if unknown,
/// or when its factory throws or makes nothing.
Expected<std::unique_ptr<LinkProtocol>> make_protocol(const std::string& name);
/// A fresh instance of `entry` (one of registered()), with make_protocol()'s checks.
Expected<std::unique_ptr<LinkProtocol>> make_protocol(const RegisteredProtocol& entry);

/// Adds one of hcomm's own protocols (the same rules as hcomm::register_protocol).
bool register_link_protocol(const std::string& name, LinkProtocolFactory factory, int preference);

/// Registers hcomm's own protocols (register_link_protocol). Defined with the built-ins; the
/// registry calls it exactly once, on its first use.
void register_builtin_protocols();

}  // namespace hcomm::transport
