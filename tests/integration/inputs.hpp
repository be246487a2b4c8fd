// The integration tests' inputs: every rank's input is a pure function of (rank, element), small
// integers that every data type holds exactly, so each rank can work out the result of any
// collective with hcomm_reference (tools/reference/) and compare.
#pragma once

#include <cstddef>

#include <hcomm/hcomm.hpp>

#include "reference/reduction.hpp"

namespace hcomm_test {

using hcomm::DataType;
using hcomm::ReduceOp;

/// Input of `rank` at element i for a reduction with `op`: small integers (products stay tiny).
inline int input_value(int rank, size_t i, ReduceOp op, DataType t) {
  bool unsigned_type = t == DataType::uint8;
  if (op == ReduceOp::prod) {
    int v = static_cast<int>((rank * 5 + i * 3) % 3);  // 0,1,2 → 1, 2, -1 (or 1 when unsigned)
    return v == 0 ? 1 : v == 1 ? 2 : (unsigned_type ? 1 : -1);
  }
  int v = static_cast<int>((static_cast<size_t>(rank) * 7 + i * 3) % 11);
  return unsigned_type ? v : v - 5;
}

/// What a reduction with `op` over `size` ranks of input_value() must give at element i, and
/// how far from it a right result may lie (reference::reduction): every partial result of these
/// inputs, in any order, is an integer every type holds, so all but a float avg are exact.
inline hcomm::tools::reference::Expectation reduced(int size, size_t i, ReduceOp op, DataType t) {
  return hcomm::tools::reference::reduction(
      t, op, size, [&](int r) { return static_cast<double>(input_value(r, i, op, t)); });
}

/// Payload of the data-movement collectives (broadcast, allgather(v), alltoall(v), gather,
/// scatter, send/recv): what rank `src` sends to rank `dst` at element i. Integers in [-50, 50]
/// ([0, 100] for uint8), exact in every type; the period in i (101) and the dependence on both
/// ranks make a misplaced, shifted or mis-routed block visible.
inline int payload_value(int src, int dst, size_t i, DataType t) {
  int v = static_cast<int>((static_cast<size_t>(src) * 37 + static_cast<size_t>(dst) * 11 + i * 5) %
                           101);
  return t == DataType::uint8 ? v : v - 50;
}

}  // namespace hcomm_test
