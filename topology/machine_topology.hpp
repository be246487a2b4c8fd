// This host's hardware as hwloc sees it: packages, cores, hardware threads, NUMA nodes and the
// NICs with their PCI address and closest NUMA node, so that transports can pick a NIC near the
// ranks' memory and hcomm-info can show people what the library found.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hcomm/status.hpp"

namespace hcomm::topology {

struct NumaNode {
  int os_index = -1;
  std::string cpus;  ///< a cpu list like "0-3,8" (OS indexes)
  uint64_t memory_bytes = 0;
};

struct Nic {
  std::string name;        ///< the OS name, e.g. eth0, ib0, mlx5_0
  std::string kind;        ///< "ethernet", "infiniband", "infiniband/rdma", "roce/rdma", ...
  std::string pci_bus_id;  ///< "0000:00:03.0", or "" when the device is not on PCI
  int numa_node = -1;      ///< the closest NUMA node's os_index; -1 when unknown or ambiguous
};

struct MachineTopology {
  int packages = 0, cores = 0, pus = 0;
  std::vector<NumaNode> numa;
  std::vector<Nic> nics;

  /// Detects with hwloc (I/O devices included: NICs and their PCI locality);
  /// HCOMM_ERR_INTERNAL with hwloc's message if hwloc fails.
  static Expected<MachineTopology> detect();
  /// Several lines for hcomm-info: packages/cores/PUs, each NUMA node with its CPUs and memory,
  /// each NIC with kind, PCI address and NUMA node.
  std::string describe() const;
};

}  // namespace hcomm::topology
