// Hierarchical allgather(v) over the hosts of PlanContext::host_of, each host led by its lowest
// rank. (1) Every other rank of a host sends its block to the leader. (2) The leaders exchange
// their hosts' blocks (a host's ranks need not be contiguous, so a host's share is a list of
// blocks): around a ring of the leaders from kRingBytes of total on, each block forwarded chunk by
// chunk as soon as it landed, else all at once. (3) Each leader broadcasts every block down a
// tree of its host's ranks (a chain from kRingBytes on, else binomial), each chunk as soon as the
// leader has it, so the phases overlap. A rank never receives its own block: for the block of a
// rank other than the leader, that rank's edge from its parent is cut and it feeds its own
// subtree, while the leader feeds the rest. Only phase (2) crosses hosts, and each host receives
// every other host's blocks exactly once. Blocks are read with recv_block(), so the V form
// (counts and displacements per rank, the same on every rank) needs nothing more.
#include <algorithm>

#include "collectives/algorithms.hpp"
#include "collectives/blocks.hpp"
#include "collectives/host_layout.hpp"
#include "collectives/tree.hpp"

namespace hcomm::collectives {
namespace {

// Phase p's step tags start at p * kPhaseTags, plus the block's rank in phases 2 and 3.
constexpr uint32_t kPhaseTags = 1u << 20;

}  // namespace

void HierarchicalAllgather::build(const Operation& op, const PlanContext& ctx, Schedule& s) {
  const int n = ctx.size, r = ctx.rank;
  const size_t esize = dtype_size(op.dtype);
  const Block mine = recv_block(op, r);
  if (mine.bytes > 0 && op.send != op.recv + mine.offset)
    s.copy(op.recv + mine.offset, op.send, mine.bytes);
  // The gathered buffer's size, the same on every rank.
  const size_t total =
      op.kind == OpKind::allgatherv ? op.agreed_bytes() : static_cast<size_t>(n) * mine.bytes;
  if (n == 1 || total == 0) return;
  const bool large = total >= kRingBytes;
  const HostLayout layout(ctx);
  const int hosts = layout.hosts(), my_host = layout.host[static_cast<size_t>(r)];
  const std::vector<int>& members = layout.members_of(r);
  const int leader = members[0];

  std::vector<Block> blocks(static_cast<size_t>(n));
  std::vector<std::vector<std::pair<size_t, size_t>>> chunks(static_cast<size_t>(n));
  for (int b = 0; b < n; ++b) {
    blocks[static_cast<size_t>(b)] = recv_block(op, b);
    chunks[static_cast<size_t>(b)] =
        split_chunks(0, blocks[static_cast<size_t>(b)].bytes, ctx.chunk_bytes, esize);
  }
  // Chunk c of block b: where this rank reads it from (its own block from op.send, which needs
  // no wait), where it lands, and its frame offset.
  auto source = [&](int b, size_t off) -> const std::byte* {
    return b == r ? op.send + off : op.recv + blocks[static_cast<size_t>(b)].offset + off;
  };
  auto dest = [&](int b, size_t off) {
    return op.recv + blocks[static_cast<size_t>(b)].offset + off;
  };
  auto frame_offset = [&](int b, size_t off) {
    return blocks[static_cast<size_t>(b)].offset + off;
  };
  // On the leader: landed[b][c], the receive after which chunk c of block b is in op.recv
  // (absent: the leader has it from the start).
  std::vector<std::vector<Schedule::Id>> landed(static_cast<size_t>(n));
  auto ready = [&](int b, size_t c) {
    const auto& l = landed[static_cast<size_t>(b)];
    return c < l.size() ? l[c] : Schedule::kNone;
  };

  // (1) Gather to the leader: step tag 0, as send_chunks keys it.
  if (r != leader) {
    send_chunks(s, ctx, esize, leader, 0, op.send, mine.bytes, mine.offset);
  } else {
    for (int m : members) {
      if (m == r) continue;
      const auto& cs = chunks[static_cast<size_t>(m)];
      for (size_t c = 0; c < cs.size(); ++c) {
        auto [off, len] = cs[c];
        landed[static_cast<size_t>(m)].push_back(
            s.recv(m, 0, static_cast<uint32_t>(c), dest(m, off), len, frame_offset(m, off)));
      }
    }
  }

  // (2) The leaders' exchange; leader i is host i's.
  if (r == leader && hosts > 1) {
    const uint32_t tag = kPhaseTags;
    auto send_host = [&](int to, int h) {  // host h's blocks, each chunk once it is here
      for (int b : layout.ranks[static_cast<size_t>(h)]) {
        const auto& cs = chunks[static_cast<size_t>(b)];
        for (size_t c = 0; c < cs.size(); ++c) {
          auto [off, len] = cs[c];
          s.order(ready(b, c), s.send(to, tag + static_cast<uint32_t>(b), static_cast<uint32_t>(c),
                                      source(b, off), len, frame_offset(b, off)));
        }
      }
    };
    auto recv_host = [&](int from, int h) {
      for (int b : layout.ranks[static_cast<size_t>(h)]) {
        const auto& cs = chunks[static_cast<size_t>(b)];
        for (size_t c = 0; c < cs.size(); ++c) {
          auto [off, len] = cs[c];
          landed[static_cast<size_t>(b)].push_back(s.recv(from, tag + static_cast<uint32_t>(b),
                                                          static_cast<uint32_t>(c), dest(b, off),
                                                          len, frame_offset(b, off)));
        }
      }
    };
    auto leader_of = [&](int h) {
      return layout.ranks[static_cast<size_t>(((h % hosts) + hosts) % hosts)][0];
    };
    if (large) {  // step st: host (i - st)'s blocks go right, host (i - st - 1)'s come from left
      const int right = leader_of(my_host + 1), left = leader_of(my_host - 1);
      for (int st = 0; st < hosts - 1; ++st) {
        send_host(right, ((my_host - st) % hosts + hosts) % hosts);
        recv_host(left, ((my_host - st - 1) % hosts + hosts) % hosts);
      }
    } else {
      for (int h = 0; h < hosts; ++h) {
        if (h == my_host) continue;
        send_host(leader_of(h), my_host);
        recv_host(leader_of(h), h);
      }
    }
  }

  // (3) Within the host, every block from the leader (and a member's own from that member).
  const int k = static_cast<int>(members.size());
  if (k == 1) return;
  const int v = index_in(members, r);
  const TreeLinks host_tree = to_real(
      large ? chain_links(PlanContext{v, k, ctx.chunk_bytes}, 0, +1) : binomial_links(v, 0, k),
      members);
  for (int b = 0; b < n; ++b) {
    TreeLinks t = host_tree;
    if (b != leader && layout.host[static_cast<size_t>(b)] == my_host) {
      if (b == r) {
        t.parent = -1;  // has its block: feeds its own subtree
      } else {
        t.children.erase(std::remove(t.children.begin(), t.children.end(), b), t.children.end());
      }
    }
    const uint32_t tag = 2 * kPhaseTags + static_cast<uint32_t>(b);
    const auto& cs = chunks[static_cast<size_t>(b)];
    for (size_t c = 0; c < cs.size(); ++c) {
      auto [off, len] = cs[c];
      broadcast_down(s, t, tag, static_cast<uint32_t>(c), dest(b, off),
                     t.parent < 0 ? source(b, off) : nullptr, len, frame_offset(b, off),
                     r == leader ? ready(b, c) : Schedule::kNone);
    }
  }
}

}  // namespace hcomm::collectives
