#include "topology/machine_topology.hpp"

#include <hwloc.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hcomm::topology {
namespace {

// hwloc allocates the topology in init and only destroy releases it, whichever step failed.
class TopologyGuard {
 public:
  TopologyGuard() = default;
  TopologyGuard(const TopologyGuard&) = delete;
  TopologyGuard& operator=(const TopologyGuard&) = delete;
  ~TopologyGuard() {
    if (initialized_) hwloc_topology_destroy(topology_);
  }
  int init() {
    const int rc = hwloc_topology_init(&topology_);
    initialized_ = rc == 0;
    return rc;
  }
  hwloc_topology_t get() const { return topology_; }

 private:
  hwloc_topology_t topology_{};
  bool initialized_ = false;
};

// hwloc reports failures through errno; it has no message strings of its own.
Status hwloc_failure(const char* call) {
  const int err = errno;
  return {HCOMM_ERR_INTERNAL, std::string("hwloc: ") + call +
                                  " failed: " + (err != 0 ? std::strerror(err) : "unknown error") +
                                  " (hwloc " HWLOC_VERSION
                                  "; HWLOC_* environment variables such as HWLOC_XMLFILE "
                                  "can redirect detection)"};
}

// hwloc_get_nbobjs_by_type returns -1 when a type lives at several depths; counting by walking
// the objects is right in every case.
int count_objects(hwloc_topology_t topology, hwloc_obj_type_t type) {
  int n = 0;
  for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topology, type, nullptr); o != nullptr;
       o = hwloc_get_next_obj_by_type(topology, type, o))
    ++n;
  return n;
}

int os_index_or_unknown(unsigned index) {
  return index == HWLOC_UNKNOWN_INDEX ? -1 : static_cast<int>(index);
}

std::string bitmap_list(hwloc_const_bitmap_t set) {
  if (set == nullptr) return "";
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || text == nullptr) return "";
  std::string out(text);
  std::free(text);  // hwloc allocates it with malloc
  return out;
}

hwloc_obj_t pci_ancestor(hwloc_obj_t obj) {
  for (hwloc_obj_t p = obj->parent; p != nullptr; p = p->parent)
    if (p->type == HWLOC_OBJ_PCI_DEVICE) return p;
  return nullptr;
}

std::string pci_bus_id(hwloc_obj_t pci) {
  if (pci == nullptr) return "";
  char buf[32];
  std::snprintf(
      buf, sizeof buf, "%04x:%02x:%02x.%x", static_cast<unsigned>(pci->attr->pcidev.domain),
      static_cast<unsigned>(pci->attr->pcidev.bus), static_cast<unsigned>(pci->attr->pcidev.dev),
      static_cast<unsigned>(pci->attr->pcidev.func));
  return buf;
}

// hwloc tells network interfaces from RDMA devices; the PCI class of the card tells Ethernet
// from InfiniBand (an IPoIB interface sits on an InfiniBand-class function).
std::string nic_kind(hwloc_obj_t osdev, hwloc_obj_t pci) {
  if (osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) return "infiniband/rdma";
  if (pci != nullptr) {
    switch (pci->attr->pcidev.class_id) {
      case 0x0200:
        return "ethernet";
      case 0x0207:
        return "infiniband";
      default:
        break;
    }
  }
  return "network";
}

// The device is close to the memory of the CPU-side object it hangs from. When that object spans
// several NUMA nodes (a host bridge attached to the whole machine), no single node is closest.
int closest_numa_node(hwloc_topology_t topology, hwloc_obj_t osdev) {
  hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topology, osdev);
  if (anchor == nullptr || anchor->nodeset == nullptr) return -1;
  if (hwloc_bitmap_weight(anchor->nodeset) != 1) return -1;
  return hwloc_bitmap_first(anchor->nodeset);
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return buf;
}

std::string plural(int n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

Expected<MachineTopology> MachineTopology::detect() {
  TopologyGuard guard;
  errno = 0;
  if (guard.init() != 0) return hwloc_failure("hwloc_topology_init");
  hwloc_topology_t topology = guard.get();
  // Without I/O discovery hwloc lists no NICs; "important" keeps network, RDMA and storage
  // devices and the bridges above them, not every PCI function.
  errno = 0;
  if (hwloc_topology_set_io_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0)
    return hwloc_failure("hwloc_topology_set_io_types_filter");
  errno = 0;
  if (hwloc_topology_load(topology) != 0) return hwloc_failure("hwloc_topology_load");

  MachineTopology out;
  out.packages = count_objects(topology, HWLOC_OBJ_PACKAGE);
  out.cores = count_objects(topology, HWLOC_OBJ_CORE);
  out.pus = count_objects(topology, HWLOC_OBJ_PU);

  for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, nullptr);
       o != nullptr; o = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, o)) {
    NumaNode node;
    node.os_index = os_index_or_unknown(o->os_index);
    node.cpus = bitmap_list(o->cpuset);
    node.memory_bytes = o->attr != nullptr ? o->attr->numanode.local_memory : 0;
    out.numa.push_back(std::move(node));
  }

  for (hwloc_obj_t o = hwloc_get_next_osdev(topology, nullptr); o != nullptr;
       o = hwloc_get_next_osdev(topology, o)) {
    const auto type = o->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    hwloc_obj_t pci = pci_ancestor(o);
    Nic nic;
    nic.name = o->name != nullptr ? o->name : "";
    nic.kind = nic_kind(o, pci);
    nic.pci_bus_id = pci_bus_id(pci);
    nic.numa_node = closest_numa_node(topology, o);
    out.nics.push_back(std::move(nic));
  }
  return out;
}

std::string MachineTopology::describe() const {
  std::string out = "machine: " + plural(packages, "package") + ", " + plural(cores, "core") +
                    ", " + plural(pus, "PU") + "\n";
  if (numa.empty()) out += "numa: none reported\n";
  for (const NumaNode& n : numa) {
    out += "numa node " + (n.os_index >= 0 ? std::to_string(n.os_index) : std::string("?")) +
           ": cpus " + (n.cpus.empty() ? std::string("none") : n.cpus) + ", memory " +
           human_bytes(n.memory_bytes) + "\n";
  }
  // Loopback and virtual interfaces (bridges, veth, ifb) are not devices hwloc lists.
  if (nics.empty()) out += "nics: none found (hwloc lists PCI network and RDMA devices only)\n";
  for (const Nic& n : nics) {
    out += "nic " + n.name + ": " + n.kind + ", pci " +
           (n.pci_bus_id.empty() ? std::string("none") : n.pci_bus_id) + ", numa node " +
           (n.numa_node >= 0 ? std::to_string(n.numa_node) : std::string("unknown")) + "\n";
  }
  return out;
}

}  // namespace hcomm::topology
