// Runs one operation at one size on every rank: times it and, with -c 1, checks every element of
// its result. Each size yields a Row, the same on every rank.
#pragma once

#include <hcomm/hcomm.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/op_table.hpp"
#include "bench/options.hpp"
#include "bench/reference.hpp"

namespace hcomm::bench {

struct Row {
  size_t bytes = 0, count = 0;
  std::string algo;
  double time_us = 0, algbw = 0, busbw = 0;
  int64_t wrong = -1;  // -1: not checked
  /// Payload bytes one operation sends between ranks of different hosts, all ranks together
  /// (-1: every rank on one host). What topology-aware algorithms are meant to reduce.
  int64_t cross_host_bytes = -1;
};

// A failing operation ends the process with kExitWrong: a benchmark cannot go on without it.
class Runner {
 public:
  Runner(Communicator& comm, const Options& o, const OpSpec& spec);

  Row run(size_t nominal_bytes);

 private:
  Case case_for(size_t nominal_bytes) const;
  size_t bytes_of(const Case& c) const;
  [[noreturn]] void fail(const char* what, const Status& st) const;
  void run_once(const Case& c, const Buffers& b);
  void barrier();
  Buffers allocate(const Case& c) const;
  void fill(const Case& c, const Buffers& b, bool sentinels) const;
  double measure(const Case& c, const Buffers& b, int64_t* cross_host_bytes);
  /// Bytes this rank has sent so far to ranks on other hosts; -1 when all share its host.
  int64_t sent_across_hosts() const;
  int64_t check(const Case& c, const Buffers& b);

  Communicator& comm_;
  const Options& o_;
  const OpSpec& spec_;
  Case base_;
};

}  // namespace hcomm::bench
