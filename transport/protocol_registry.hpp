// The one registry of transport protocols (hcomm/protocol.hpp): hcomm's own and an application's,
// by name. Communicator creation asks it which protocols exist, in order of preference, and for a
// fresh instance of each.
//
// Registration may happen from static initialisers of any translation unit
// (HCOMM_REGISTER_PROTOCOL) and from any thread: the registry is a function-local static behind a
// mutex. hcomm's built-in protocols are added on first use, before anything else, so an application
// cannot take their names.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hcomm/protocol.hpp"
#include "hcomm/status.hpp"

namespace hcomm::transport {

struct RegisteredProtocol {
  std::string name;
  int preference = 0;
  ProtocolFactory factory;
};

/// Every registered protocol, most preferred first; equal preferences by name.
std::vector<RegisteredProtocol> registered();

/// A fresh instance of `name`; HCOMM_ERR_INVALID_ARG listing the registered names if unknown.
Expected<std::unique_ptr<Protocol>> make_protocol(const std::string& name);

/// Registers hcomm's own protocols (through hcomm::register_protocol). Defined with the built-ins;
/// the registry calls it exactly once, on its first use.
void register_builtin_protocols();

}  // namespace hcomm::transport
