// Trees over the ranks, and the per-chunk steps that move data along them. The chain, binomial
// and double-binary-tree algorithms differ only in their trees: reducing toward the root and
// broadcasting away from it are the same steps over any of them. Chains follow the context's
// ring order (topology-aware); the other trees are over rank numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/schedule.hpp"

namespace hcomm::collectives {

/// One rank's neighbours in a tree: parent -1 at the root.
struct TreeLinks {
  int parent = -1;
  std::vector<int> children;
};

/// ctx.rank's links in a chain from `root` through the ranks at positions position_of(root) + dir,
/// + 2 dir, ... of the ring order (dir is +1 or -1); with no order: root + dir, root + 2 dir, ...
TreeLinks chain_links(const PlanContext& ctx, int root, int dir);
/// The binomial tree rooted at `root`: log2(n) levels, a rank's subtree is contiguous.
TreeLinks binomial_links(int rank, int root, int n);
/// Tree `tree` (0 or 1) of NCCL's double binary tree over ranks 0..n-1. Tree 1 mirrors tree 0
/// (even n) or shifts it by one rank (odd n), so that most interior ranks of one tree are leaves
/// of the other: each tree carries half the data and no link carries more than one half.
TreeLinks double_tree_links(int tree, int rank, int n);
/// The double binary tree for rooted operations: `root` is the parent of the roots of both trees,
/// which span the other n-1 ranks.
TreeLinks rooted_double_tree_links(int tree, int rank, int root, int n);

/// Reduces one chunk toward the root: the children's contributions are added to `own` into
/// `acc`, one child after the other, and the sum goes on to the parent (a leaf sends `own`).
/// Returns the last step: at the root, acc then holds the reduction (kNone for a lone root).
Schedule::Id reduce_up(Schedule& s, const TreeLinks& t, uint32_t tag, uint32_t chunk,
                       const std::byte* own, std::byte* acc, size_t bytes, uint64_t offset);

/// Broadcasts one chunk away from the root: a non-root receives it into `dst` once `after`
/// completed, then forwards it to its children; the root sends `src` once `after` completed.
void broadcast_down(Schedule& s, const TreeLinks& t, uint32_t tag, uint32_t chunk, std::byte* dst,
                    const std::byte* src, size_t bytes, uint64_t offset, Schedule::Id after);

/// Reduce (the operation): bytes [begin, begin + bytes) reduced toward op.root along `links`,
/// chunk by chunk with step tag `tag`. The root's result lands in its op.recv (averaged, for
/// avg); the partial sums of other ranks in `partial` (scratch as large as the buffer; leaves
/// need none).
void reduce_range(Schedule& s, const Operation& op, const PlanContext& ctx, const TreeLinks& links,
                  uint32_t tag, size_t begin, size_t bytes, std::byte* partial);
/// Broadcast (the operation): bytes [begin, begin + bytes) from the root's op.send to every
/// op.recv along `links`, chunk by chunk with step tag `tag`. The root's own copy is the
/// caller's.
void broadcast_range(Schedule& s, const Operation& op, const PlanContext& ctx,
                     const TreeLinks& links, uint32_t tag, size_t begin, size_t bytes);

}  // namespace hcomm::collectives
