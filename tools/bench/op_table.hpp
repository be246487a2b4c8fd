// The table of operations hcomm-bench runs: for each, its buffers, input, expected result,
// bus-bandwidth factor and how to start it through the public API.
#pragma once

#include <hcomm/hcomm.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/inputs.hpp"

namespace hcomm::tools::bench {

// One rank's buffers for one Case: the storage owns them; send and recv are what the call gets.
struct Buffers {
  // Page-aligned, as an application should allocate for RDMA: a buffer that starts on a 4 KiB
  // boundary is registered once and sent in place (see hcomm/memory.hpp).
  std::shared_ptr<void> send_storage, recv_storage;
  size_t send_elems = 0, recv_elems = 0;
  void* send = nullptr;
  void* recv = nullptr;
};

// One operation: its geometry, how to start it, and where its result comes from. Element counts
// of 0 mean "no buffer on this rank" (the API lets non-roots pass nullptr there).
struct OpSpec {
  const char* name;
  bool reduces;  // takes -o (else the redop column says "none", as in nccl-tests)
  bool rooted;   // takes -r (else the root column says -1)
  bool blocked;  // the buffer is world_size blocks of `count` elements
  double (*bus_factor)(int n);
  size_t (*send_elems)(const Case&);
  size_t (*recv_elems)(const Case&);
  double (*send_value)(const Case&, size_t k);                // input element k of this rank
  reference::Expectation (*expected)(const Case&, size_t k);  // result element k of this rank
  bool recv_is_root_input;  // broadcast: the root's buffer is its input
  Work (*start)(Communicator&, const Case&, const Buffers&);
};

// nullptr for an unknown name.
const OpSpec* find_op(const std::string& name);

// Every operation's name, in the table's order.
std::vector<std::string> op_names();

}  // namespace hcomm::tools::bench
