// The capacity QoS divides: HCOMM_LINK_GBPS when set, else the speed the interface that carries
// the traffic reports (/sys/class/net/<if>/speed), else 10 Gbit/s.
#pragma once

#include <string>

#include "hcomm/config.hpp"

namespace hcomm::qos {

/// Bytes per second of the link (`fallback`: of the fallback link) for a communicator listening
/// on `local_ip`; `why` says where the figure comes from, for the log.
double link_capacity(const Config& cfg, const std::string& local_ip, bool fallback,
                     std::string* why);

}  // namespace hcomm::qos
