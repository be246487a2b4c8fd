// The operations: small functions for each column of the table, then the table itself.
#include "bench/op_table.hpp"

namespace hcomm::tools::bench {
namespace {

double factor_one(int) {
  return 1;
}
double factor_allreduce(int n) {
  return 2.0 * (n - 1) / n;
}
double factor_gather_like(int n) {
  return static_cast<double>(n - 1) / n;
}

size_t none(const Case&) {
  return 0;
}
size_t one_block(const Case& c) {
  return c.count;
}
size_t all_blocks(const Case& c) {
  return c.count * static_cast<size_t>(c.n);
}
size_t one_block_on_root(const Case& c) {
  return c.rank == c.root ? c.count : 0;
}
size_t all_blocks_on_root(const Case& c) {
  return c.rank == c.root ? all_blocks(c) : 0;
}

double mine(const Case& c, size_t k) {
  return pattern(c, c.rank, k);
}
double roots(const Case& c, size_t k) {
  return pattern(c, c.root, k);
}

using reference::Expectation;
Expectation roots_input(const Case& c, size_t k) {
  return exactly(roots(c, k));
}
Expectation reduced_here(const Case& c, size_t k) {
  return reduced(c, k);
}
Expectation reduced_my_block(const Case& c, size_t k) {
  return reduced(c, c.rank * c.count + k);
}
Expectation gathered(const Case& c, size_t k) {
  return exactly(pattern(c, static_cast<int>(k / c.count), k % c.count));
}
Expectation from_everyone(const Case& c, size_t k) {  // block q of rank r = block r of rank q's
  return exactly(pattern(c, static_cast<int>(k / c.count), c.rank * c.count + k % c.count));
}
Expectation roots_my_block(const Case& c, size_t k) {
  return exactly(pattern(c, c.root, c.rank * c.count + k));
}
Expectation from_left(const Case& c, size_t k) {
  return exactly(pattern(c, (c.rank + c.n - 1) % c.n, k));
}

// Columns: name, reduces, rooted, blocked, bus_factor, send_elems, recv_elems, send_value,
// expected, recv_is_root_input, start.
const OpSpec kOps[] = {
    {"allreduce", true, false, false, factor_allreduce, one_block, one_block, mine, reduced_here,
     false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.allreduce_async(b.send, b.recv, c.count, c.dtype, c.redop);
     }},
    {"broadcast", false, true, false, factor_one, none, one_block, nullptr, roots_input, true,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.broadcast_async(b.recv, c.count, c.dtype, c.root);
     }},
    {"reduce", true, true, false, factor_one, one_block, one_block_on_root, mine, reduced_here,
     false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.reduce_async(b.send, b.recv, c.count, c.dtype, c.redop, c.root);
     }},
    {"allgather", false, false, true, factor_gather_like, one_block, all_blocks, mine, gathered,
     false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.allgather_async(b.send, b.recv, c.count, c.dtype);
     }},
    {"reduce_scatter", true, false, true, factor_gather_like, all_blocks, one_block, mine,
     reduced_my_block, false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.reduce_scatter_async(b.send, b.recv, c.count, c.dtype, c.redop);
     }},
    {"alltoall", false, false, true, factor_gather_like, all_blocks, all_blocks, mine,
     from_everyone, false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.alltoall_async(b.send, b.recv, c.count, c.dtype);
     }},
    {"gather", false, true, true, factor_one, one_block, all_blocks_on_root, mine, gathered, false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.gather_async(b.send, b.recv, c.count, c.dtype, c.root);
     }},
    {"scatter", false, true, true, factor_one, all_blocks_on_root, one_block, roots, roots_my_block,
     false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       return m.scatter_async(b.send, b.recv, c.count, c.dtype, c.root);
     }},
    {"sendrecv", false, false, false, factor_one, one_block, one_block, mine, from_left, false,
     [](Communicator& m, const Case& c, const Buffers& b) {
       using P = hcomm::PointToPointOp;
       // One batch, so that the ring of exchanges cannot deadlock whatever the order.
       return m.batch_async(
           {P{P::Kind::send, b.send, c.count, c.dtype, (c.rank + 1) % c.n, 0},
            P{P::Kind::recv, b.recv, c.count, c.dtype, (c.rank + c.n - 1) % c.n, 0}});
     }},
    {"barrier", false, false, false, factor_one, none, none, nullptr, nullptr, false,
     [](Communicator& m, const Case&, const Buffers&) { return m.barrier_async(); }},
};

}  // namespace

const OpSpec* find_op(const std::string& name) {
  for (const OpSpec& s : kOps)
    if (name == s.name) return &s;
  return nullptr;
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const OpSpec& s : kOps) names.emplace_back(s.name);
  return names;
}

}  // namespace hcomm::tools::bench
