// Hierarchical broadcast over the hosts of PlanContext::host_of. Each host has a leader: the root
// on the root's host, the lowest rank on the others. The leaders form one tree rooted at the
// root, and the ranks of each host another rooted at their leader; a leader's children are its
// children in both. The buffer goes down that composite tree chunk by chunk (broadcast_range), so
// a leader forwards chunk k to its host while chunk k+1 is still crossing hosts: only the leaders'
// tree crosses hosts, and each host other than the root's receives the buffer exactly once.
// Both trees are chains (pipelined, every link carries the buffer once) from kRingBytes on, and
// binomial trees (fewest rounds) below, as in the hierarchical allreduce.
#include "collectives/algorithms.hpp"
#include "collectives/host_layout.hpp"
#include "collectives/tree.hpp"

namespace hcomm::collectives {

void HierarchicalBroadcast::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const size_t total = op.count * dtype_size(op.dtype);
  if (total == 0) return;
  if (ctx.rank == op.root && op.send != op.recv) s.copy(op.recv, op.send, total);
  if (ctx.size == 1) return;
  const bool chains = total >= kRingBytes;
  const HostLayout layout(ctx);
  const int root_host = layout.host[static_cast<size_t>(op.root)];
  const int hosts = layout.hosts();
  std::vector<int> leaders(static_cast<size_t>(hosts));
  for (int h = 0; h < hosts; ++h)
    leaders[static_cast<size_t>(h)] =
        h == root_host ? op.root : layout.ranks[static_cast<size_t>(h)][0];
  // A tree over virtual ranks 0..k-1 rooted at `root`, for virtual rank `v`.
  auto tree = [&](int v, int root, int k) {
    return chains ? chain_links(PlanContext{v, k, ctx.chunk_bytes}, root, +1)
                  : binomial_links(v, root, k);
  };

  const std::vector<int>& members = layout.members_of(ctx.rank);
  const int k = static_cast<int>(members.size());
  const int leader = leaders[static_cast<size_t>(layout.host[static_cast<size_t>(ctx.rank)])];
  TreeLinks links =
      to_real(tree(index_in(members, ctx.rank), index_in(members, leader), k), members);
  if (ctx.rank == leader && hosts > 1) {
    // The leaders' tree first: its children are the ones across hosts, the slower links.
    TreeLinks across = to_real(tree(index_in(leaders, ctx.rank), root_host, hosts), leaders);
    across.children.insert(across.children.end(), links.children.begin(), links.children.end());
    links = std::move(across);
  }
  broadcast_range(s, op, ctx, links, 0, 0, total);
}

}  // namespace hcomm::collectives
