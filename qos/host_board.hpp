// The host's QoS board: one small shared-memory segment (/dev/shm/hcomm-qos2-<host>) where each
// rank on this host of a communicator that uses QoS holds a slot with the communicator's class
// and when it last had traffic. Each process's QoS controller reads the whole board to divide
// the link, so that tenants in different processes (separate jobs) share it as their classes
// say. A communicator with several ranks on the host is one tenant: its slots count once, and
// its rate is split among them. Slots of processes that died are reclaimed by the next reader.
// Any thread; lock-free (slots are claimed with a compare-and-swap, fields are atomics).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "hcomm/qos.hpp"
#include "hcomm/status.hpp"
#include "transport/shm/shared_segment.hpp"

namespace hcomm::qos {

class HostBoard {
 public:
  static constexpr int kSlots = 128;
  /// The board of the host `host_id` names (topology/host_identity: network namespaces that
  /// are hosts of their own get boards of their own), opened, or created by the first
  /// communicator with QoS on the host (the last one's release() removes it).
  static Expected<std::shared_ptr<HostBoard>> get(const std::string& host_id);

  /// A slot for a communicator of this process with class `qos`; HCOMM_ERR_INVALID_ARG when the
  /// minimums of the host's classes would add up to more than 100%.
  Expected<int> claim(uint64_t comm, const QosClass& qos);
  /// A new class for `slot` (the same check).
  Status update(int slot, const QosClass& qos);
  void release(int slot);
  /// The send path's news for `slot`: `bytes` more sent; the class has traffic until
  /// `active_until_ns` (steady clock) and, when `backlogged`, wants more than its rate gives.
  void note(int slot, uint64_t bytes, int64_t active_until_ns, bool backlogged);
  void set_on_fallback(int slot, bool on_fallback);

  struct Entry {
    int slot = -1;
    uint64_t comm = 0;
    QosClass qos;
    bool active = false;
    bool backlogged = false;  ///< limited by its rate (frames wait), not by its own traffic
    bool on_fallback = false;
    uint64_t bytes_sent = 0;  ///< so far, by the slot's process
  };
  /// Every live slot; slots of dead processes are freed on the way.
  std::vector<Entry> read(int64_t now_ns);

  HostBoard(transport::shm::SharedSegment segment, std::string name);
  const std::string& name() const { return name_; }

 private:
  struct Slot;
  struct Layout;
  /// The minimums of the host's communicators but `comm`, plus `qos`'s: at most 100.
  Status check_sum(uint64_t comm, const QosClass& qos);
  Layout& layout() const;

  transport::shm::SharedSegment segment_;
  std::string name_;
};

/// Steady-clock nanoseconds (the same clock in every process of the host).
int64_t steady_ns();

}  // namespace hcomm::qos
