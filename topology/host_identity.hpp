// topology/: what the machine and the cluster look like — this host's identity, its NUMA nodes,
// cores and NICs (hwloc), and the optional HCOMM_TOPO_FILE of switches and racks — so that
// transports and collectives can follow the hardware.
//
// This file: which ranks share a host. Two processes are on one host when they can map the
// same shared-memory segments and see each other's pids: same kernel boot, same network, IPC and
// pid namespaces, same file system behind /dev/shm (a network namespace stands for a host in the
// tests). HCOMM_HOST_ID overrides.
#pragma once

#include <string>

namespace hcomm::topology {

struct HostIdentity {
  std::string id;    ///< equal on two processes exactly when they share a host
  std::string name;  ///< the hostname (UTS namespace), for people
};

/// This process's host identity: HCOMM_HOST_ID if set, else boot id and namespace inodes.
HostIdentity this_host();

}  // namespace hcomm::topology
