// Bootstrap: which local IPv4 address a rank listens on and publishes to its peers.
#pragma once

#include <string>

#include "hcomm/status.hpp"

namespace hcomm::bootstrap {

/// The IPv4 address (dotted quad) of network interface `ifname`, from getifaddrs. Fails with
/// HCOMM_ERR_INVALID_ARG when there is no such interface or it has no IPv4 address; the message
/// lists the interfaces that do have one, so that HCOMM_SOCKET_IFNAME can be fixed.
Expected<std::string> interface_ipv4(const std::string& ifname);

/// The address this rank should listen on and publish, first rule that applies:
///   1. `ifname` given (HCOMM_SOCKET_IFNAME): that interface's address, or its error;
///   2. `root_host` is a loopback address ("localhost", 127.x.y.z): "127.0.0.1";
///   3. the local address the kernel routes through to reach `root_host` (a UDP socket is
///      connected and asked its name; nothing is sent);
///   4. the first interface that is up, not loopback, and has an IPv4 address.
/// Fails with HCOMM_ERR_NO_DEVICE when none of these gives an address.
Expected<std::string> pick_local_address(const std::string& ifname, const std::string& root_host);

}  // namespace hcomm::bootstrap
