// The hosts of PlanContext::host_of as the hierarchical broadcast and allgather(v) see them: the
// ranks of each host in ascending order, hosts in order of their lowest rank, and where this rank
// stands. Leaders are the caller's choice (the lowest rank of each host, or a broadcast's root).
#pragma once

#include <map>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/tree.hpp"

namespace hcomm::collectives {

struct HostLayout {
  /// ranks[h]: host h's ranks, ascending; hosts in order of their lowest rank.
  std::vector<std::vector<int>> ranks;
  /// host[r]: the index into `ranks` of rank r's host.
  std::vector<int> host;

  explicit HostLayout(const PlanContext& ctx) : host(static_cast<size_t>(ctx.size)) {
    std::map<int, int> index;  // host_of value -> index into ranks
    for (int r = 0; r < ctx.size; ++r) {
      const int id = ctx.host_of ? (*ctx.host_of)[static_cast<size_t>(r)] : 0;
      auto it = index.emplace(id, static_cast<int>(ranks.size())).first;
      if (it->second == static_cast<int>(ranks.size())) ranks.emplace_back();
      ranks[static_cast<size_t>(it->second)].push_back(r);
      host[static_cast<size_t>(r)] = it->second;
    }
  }
  int hosts() const { return static_cast<int>(ranks.size()); }
  const std::vector<int>& members_of(int r) const {
    return ranks[static_cast<size_t>(host[static_cast<size_t>(r)])];
  }
};

/// Where `r` stands in `v` (-1: not there).
inline int index_in(const std::vector<int>& v, int r) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == r) return static_cast<int>(i);
  return -1;
}

/// `t`, a tree over virtual ranks 0..k-1, with real ranks: real[v] for v.
inline TreeLinks to_real(TreeLinks t, const std::vector<int>& real) {
  if (t.parent >= 0) t.parent = real[static_cast<size_t>(t.parent)];
  for (int& c : t.children) c = real[static_cast<size_t>(c)];
  return t;
}

}  // namespace hcomm::collectives
