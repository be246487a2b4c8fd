// The order of ranks around rings and chains: ranks of one host next to each other, hosts of one
// switch next to each other, switches of one rack next to each other — so a ring crosses each
// host, switch and rack boundary once instead of at every step of an interleaved placement.
#pragma once

#include <string>
#include <vector>

#include "topology/topology_file.hpp"

namespace hcomm::topology {

/// `host_ids[r]` / `host_names[r]`: rank r's host. `file` (may be null) places hosts under
/// switches and racks, by name or id; unlisted hosts are each a switch and rack of their own.
/// Groups keep the order of their lowest rank, and ranks keep theirs within a host, so an
/// already grouped placement gives 0, 1, ..., n-1.
std::vector<int> ring_order(const std::vector<std::string>& host_ids,
                            const std::vector<std::string>& host_names, const TopologyFile* file);

}  // namespace hcomm::topology
