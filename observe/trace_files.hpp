// The files observe/ writes: the profile (Chrome Trace Event format, which Perfetto and
// chrome://tracing open; also read by hcomm-visualize) and the flight recorder's dump (read by
// hcomm-diagnose). Their fields are listed in the README ("Observability"). Pure: the callers
// gather what goes in; times are converted to rank 0's clock (offset_ns) in microseconds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hcomm/communicator.hpp"
#include "observe/op_record.hpp"

namespace hcomm::observe {

/// A sample of a communicator's counters (HCOMM_PROFILE: every 100 ms).
struct CounterSample {
  int64_t at_ns = 0;
  uint64_t in_flight = 0;
  std::vector<std::pair<std::string, uint64_t>> bytes_sent;  ///< cumulative, by transport
};

/// A frame of a level-2 profile: a send or receive step of one operation, with the peer.
struct TransferRecord {
  uint64_t seq = 0;
  collectives::OpKind kind = collectives::OpKind::barrier;
  bool send = true;
  int peer = -1;
  uint32_t step = 0;  ///< the frame's step and chunk: alike on the sender and the receiver
  uint32_t chunk = 0;
  uint64_t bytes = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

/// What one communicator contributes to a file.
struct CommTraceData {
  std::string id;
  int rank = 0;
  int size = 1;
  int64_t offset_ns = 0;  ///< rank 0's clock minus this rank's
  size_t buffer_size = 0;
  uint64_t recorded = 0;
  std::vector<OpRecord> records;  ///< oldest first
  std::vector<LinkEvent> link_events;
  std::vector<CounterSample> counters;
  std::vector<TransferRecord> transfers;
  uint64_t transfers_dropped = 0;
};

struct ProcessFacts {
  int rank = 0;  ///< the process's rank (of its first communicator)
  int world_size = 1;
  std::string host;
  int pid = 0;
  int64_t offset_ns = 0;
};

/// The profile of a process: every communicator's operations, link events and counters.
std::string profile_json(const ProcessFacts& facts, int level,
                         const std::vector<CommTraceData>& comms);
/// The flight recorder's dump; `reason`: stall, timeout, abort, peer_lost, signal, exit, request.
std::string dump_json(const ProcessFacts& facts, const std::string& reason,
                      const std::string& detail, const std::vector<CommTraceData>& comms);

/// PyTorch profiler's name of an element type ("Float", "BFloat16", ...).
const char* torch_dtype_name(DataType t);

/// Writes `text` to `path` through a temporary file and a rename (readers never see half a file).
Status write_file_atomically(const std::string& path, const std::string& text);

}  // namespace hcomm::observe
