// The live counters of one process's communicators, in a shared-memory segment that
// hcomm-perf-mon maps read-only: /dev/shm/hcomm-stats.<pid> (HCOMM_STATS=0: none).
//
// Layout (version 2): a StatsSegment, fixed size, every field naturally aligned; counters are
// lock-free 64-bit atomics, written by the process (relaxed), read by anyone. A slot is claimed by
// writing its fields, then `state = kLive` (release); a reader reads `state` (acquire) first.
// Counters are cumulative: a reader takes two samples and divides by the time between them.
// The segment is removed when the process ends normally; a reader skips segments whose process is
// gone (and removes them).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hcomm/status.hpp"

namespace hcomm::observe {

inline constexpr char kStatsMagic[8] = {'H', 'C', 'S', 'T', 'A', 'T', 'S', '1'};
inline constexpr uint32_t kStatsVersion = 2;
inline constexpr size_t kStatsComms = 16;      ///< communicators per process shown at once
inline constexpr size_t kStatsTransports = 4;  ///< transports per communicator, by bytes sent

struct StatsTransport {
  char name[16];                     ///< "shm", "tcp", "rdma", "tcp-fallback", ...
  std::atomic<uint64_t> bytes_sent;  ///< payload bytes sent to peers over it
};

struct StatsComm {
  static constexpr uint32_t kFree = 0, kLive = 1, kClosed = 2;
  std::atomic<uint32_t> state;
  int32_t rank;
  int32_t size;
  uint32_t num_transports;
  char id[24];                  ///< the communicator's id (hex), as in the trace files
  std::atomic<uint64_t> ops;    ///< operations submitted
  std::atomic<uint64_t> bytes;  ///< their bytes (OpRecord::bytes)
  std::atomic<uint64_t> in_flight;
  std::atomic<uint64_t> oldest_age_us;  ///< of the oldest operation in flight; 0: none
  std::atomic<uint64_t> oldest_seq;
  std::atomic<uint32_t> oldest_kind;  ///< collectives::OpKind
  std::atomic<uint32_t> peers_on_fallback;
  std::atomic<uint32_t> peers_lost;
  std::atomic<uint32_t> qos_min;  ///< QosClass shares in percent; max 100 and min 0: unpaced
  std::atomic<uint32_t> qos_max;
  std::atomic<uint32_t> qos_priority;
  std::atomic<uint64_t> failovers;
  std::atomic<uint64_t> failbacks;
  /// Link health (failover_stats().links): links failed for being sick, the medium's
  /// retransmissions on every link (cumulative), the largest smoothed round trip of a link
  /// that carries traffic now.
  std::atomic<uint64_t> gray_failures;
  std::atomic<uint64_t> retransmits;
  std::atomic<uint64_t> link_rtt_us;
  std::atomic<int64_t> updated_ns;  ///< steady clock of the last refresh
  StatsTransport transports[kStatsTransports];
};

struct StatsSegment {
  char magic[8];
  uint32_t version;
  int32_t pid;
  char host[64];
  StatsComm comms[kStatsComms];
};

/// The process's segment: created on first use, unlinked by the process's exit.
class StatsPublisher {
 public:
  /// Creates /dev/shm/hcomm-stats.<pid>; an error when shared memory is unavailable.
  static Expected<std::unique_ptr<StatsPublisher>> create(const std::string& host);
  ~StatsPublisher();
  /// A free slot, its identity written and state kLive; nullptr when all are taken.
  StatsComm* claim(const std::string& id, int rank, int size);
  /// Marks `slot` closed (its counters stay readable until the slot is claimed again).
  void release(StatsComm* slot);

 private:
  StatsPublisher(StatsSegment* seg, std::string path) : seg_(seg), path_(std::move(path)) {}
  StatsSegment* seg_;
  std::string path_;
};

/// One process's segment, mapped read-only.
class StatsView {
 public:
  /// Every hcomm process on this host whose segment is readable (segments of dead processes are
  /// removed on the way).
  static std::vector<std::unique_ptr<StatsView>> attach_all();
  ~StatsView();
  const StatsSegment& segment() const { return *seg_; }
  int pid() const { return seg_->pid; }

 private:
  explicit StatsView(const StatsSegment* seg) : seg_(seg) {}
  const StatsSegment* seg_;
};

}  // namespace hcomm::observe
