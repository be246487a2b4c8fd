// How a traffic class is marked on the wire, so that the network can honour it too: DSCP class
// selector CS<priority> (CS0, the default, for priority 0), as the IP TOS byte (DSCP << 2) on
// TCP sockets and as the GRH traffic class on RoCE.
#pragma once

#include "hcomm/qos.hpp"

namespace hcomm::qos {

inline int tos_of(const QosClass& qos) {
  return (qos.priority << 3) << 2;
}

}  // namespace hcomm::qos
