#include "collectives/tree.hpp"

namespace hcomm::collectives {
namespace {

int mod(int x, int n) {
  return ((x % n) + n) % n;
}

/// NCCL's binary tree over 0..m-1, rooted at 0: a node's parent clears its lowest set bit and
/// sets the next one up (or only clears it, when that leaves the range).
int btree_parent(int x, int m) {
  if (x == 0) return -1;
  const int bit = x & -x;
  const int up = (x ^ bit) | (bit << 1);
  return up < m ? up : (x ^ bit);
}

}  // namespace

TreeLinks chain_links(const PlanContext& ctx, int root, int dir) {
  TreeLinks t;
  const int at = ctx.position_of(ctx.rank);
  const int hop = mod((at - ctx.position_of(root)) * dir, ctx.size);  // hops from the root
  if (hop > 0) t.parent = ctx.rank_at(at - dir);
  if (hop < ctx.size - 1) t.children.push_back(ctx.rank_at(at + dir));
  return t;
}

TreeLinks binomial_links(int rank, int root, int n) {
  TreeLinks t;
  const int v = mod(rank - root, n);
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (v & mask) {
      t.parent = mod(v - mask + root, n);
      break;
    }
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < n) t.children.push_back(mod(v + mask + root, n));
  return t;
}

TreeLinks double_tree_links(int tree, int rank, int n) {
  // Position x of the binary tree sits on rank x in tree 0; in tree 1 on rank n-1-x (even n) or
  // x+1 (odd n).
  const bool mirror = n % 2 == 0;
  auto rank_of = [&](int x) { return tree == 0 ? x : mirror ? n - 1 - x : (x + 1) % n; };
  const int pos = tree == 0 ? rank : mirror ? n - 1 - rank : mod(rank - 1, n);
  TreeLinks t;
  const int p = btree_parent(pos, n);
  if (p >= 0) t.parent = rank_of(p);
  for (int x = 0; x < n; ++x)
    if (btree_parent(x, n) == pos) t.children.push_back(rank_of(x));
  return t;
}

TreeLinks rooted_double_tree_links(int tree, int rank, int root, int n) {
  TreeLinks t;
  if (n == 1) return t;
  // The other ranks, numbered 0..n-2 from root + 1 on, form a double binary tree of their own.
  const int m = n - 1;
  auto rank_of = [&](int x) { return (x + 1 + root) % n; };
  if (rank == root) {
    for (int x = 0; x < m; ++x)
      if (double_tree_links(tree, x, m).parent < 0) t.children.push_back(rank_of(x));
    return t;
  }
  const TreeLinks inner = double_tree_links(tree, mod(rank - root - 1, n), m);
  t.parent = inner.parent < 0 ? root : rank_of(inner.parent);
  for (int c : inner.children) t.children.push_back(rank_of(c));
  return t;
}

Schedule::Id reduce_up(Schedule& s, const TreeLinks& t, uint32_t tag, uint32_t chunk,
                       const std::byte* own, std::byte* acc, size_t bytes, uint64_t offset) {
  const std::byte* sum = own;
  Schedule::Id last = Schedule::kNone;
  for (int child : t.children) {
    // One child at a time: both reductions write acc.
    Schedule::Id id = s.recv_reduce(child, tag, chunk, acc, sum, bytes, offset);
    s.order(last, id);
    last = id;
    sum = acc;
  }
  if (t.parent >= 0) {
    Schedule::Id up = s.send(t.parent, tag, chunk, sum, bytes, offset);
    s.order(last, up);
    last = up;
  }
  return last;
}

void broadcast_down(Schedule& s, const TreeLinks& t, uint32_t tag, uint32_t chunk, std::byte* dst,
                    const std::byte* src, size_t bytes, uint64_t offset, Schedule::Id after) {
  Schedule::Id got = after;
  if (t.parent >= 0) {
    got = s.recv(t.parent, tag, chunk, dst, bytes, offset);
    s.order(after, got);
    src = dst;
  }
  for (int child : t.children) s.order(got, s.send(child, tag, chunk, src, bytes, offset));
}

void reduce_range(Schedule& s, const Operation& op, const PlanContext& ctx, const TreeLinks& links,
                  uint32_t tag, size_t begin, size_t bytes, std::byte* partial) {
  const bool root = links.parent < 0;
  if (root && links.children.empty()) {  // alone
    if (op.send != op.recv) s.copy(op.recv + begin, op.send + begin, bytes);
    return;
  }
  const size_t esize = dtype_size(op.dtype);
  const auto chunks = split_chunks(begin, bytes, ctx.chunk_bytes, esize);
  for (size_t c = 0; c < chunks.size(); ++c) {
    auto [off, len] = chunks[c];
    std::byte* acc = root ? op.recv + off : links.children.empty() ? nullptr : partial + off;
    Schedule::Id last =
        reduce_up(s, links, tag, static_cast<uint32_t>(c), op.send + off, acc, len, off);
    if (root && op.redop == ReduceOp::avg) s.order(last, s.average(acc, len));
  }
}

void broadcast_range(Schedule& s, const Operation& op, const PlanContext& ctx,
                     const TreeLinks& links, uint32_t tag, size_t begin, size_t bytes) {
  const bool root = links.parent < 0;
  const size_t esize = dtype_size(op.dtype);
  const auto chunks = split_chunks(begin, bytes, ctx.chunk_bytes, esize);
  for (size_t c = 0; c < chunks.size(); ++c) {
    auto [off, len] = chunks[c];
    broadcast_down(s, links, tag, static_cast<uint32_t>(c), op.recv + off,
                   root ? op.send + off : nullptr, len, off, Schedule::kNone);
  }
}

}  // namespace hcomm::collectives
