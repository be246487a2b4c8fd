#include "topology/ring_order.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace hcomm::topology {

std::vector<int> ring_order(const std::vector<std::string>& host_ids,
                            const std::vector<std::string>& host_names, const TopologyFile* file) {
  const int n = static_cast<int>(host_ids.size());
  // Each rank's (rack, switch, host) names; unlisted hosts stand alone at every level.
  std::vector<std::tuple<std::string, std::string, std::string>> where(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const auto ur = static_cast<size_t>(r);
    const Placement* p = nullptr;
    if (file != nullptr) {
      p = file->find(host_names[ur]);
      if (p == nullptr) p = file->find(host_ids[ur]);
    }
    const std::string host = "h:" + host_ids[ur];
    const std::string sw = p != nullptr ? "s:" + p->switch_name : host;
    const std::string rack = p == nullptr ? host : p->rack.empty() ? sw : "r:" + p->rack;
    where[ur] = {rack, sw, host};
  }
  // A group sorts by the lowest rank in it: deterministic, and the identity when grouped.
  std::map<std::string, int> first;
  for (int r = 0; r < n; ++r) {
    const auto& [rack, sw, host] = where[static_cast<size_t>(r)];
    for (const std::string* key : {&rack, &sw, &host}) first.emplace(*key, r);  // keeps the lowest
  }
  std::vector<int> order(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) order[static_cast<size_t>(r)] = r;
  auto key = [&](int r) {
    const auto& [rack, sw, host] = where[static_cast<size_t>(r)];
    return std::make_tuple(first[rack], first[sw], first[host], r);
  };
  std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
  return order;
}

}  // namespace hcomm::topology
