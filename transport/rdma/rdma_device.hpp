// transport/rdma/: RoCEv2 through rdma-core (libibverbs). An RdmaDevice is one opened device port
// of this process: its context, protection domain, the GID packets are addressed with, and the
// memory-registration cache of that protection domain. Communicators share it (one per device
// per process, as the registration cache must be); RdmaLink is one peer over it.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "hcomm/status.hpp"
#include "transport/link.hpp"
#include "transport/rdma/async_event_monitor.hpp"
#include "transport/rdma/mr_cache.hpp"

namespace hcomm::transport::rdma {

class RdmaDevice {
 public:
  /// Opens `name` (empty: the first device whose port is active and has an IPv4 RoCEv2 GID) with
  /// GID `gid_index` (-1: the port's IPv4 RoCEv2 GID), or returns the one this process already
  /// opened. HCOMM_ERR_NO_DEVICE says what is missing and what to check.
  static Expected<std::shared_ptr<RdmaDevice>> open(const std::string& name, int gid_index,
                                                    size_t pin_budget);
  /// Devices of this process already opened (each gets an mr_cache actor).
  static std::vector<std::shared_ptr<RdmaDevice>> opened();

  ~RdmaDevice();
  RdmaDevice(const RdmaDevice&) = delete;
  RdmaDevice& operator=(const RdmaDevice&) = delete;

  const std::string& name() const { return name_; }
  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  uint8_t port() const { return port_; }
  int gid_index() const { return gid_index_; }
  const ibv_gid& gid() const { return gid_; }
  ibv_mtu active_mtu() const { return active_mtu_; }
  /// The network interface the GID belongs to ("veth0"), or "" when unknown.
  const std::string& netdev() const { return netdev_; }
  MrCache& mr_cache() { return *cache_; }
  /// Why registering `bytes` failed with `err` (errno of ibv_reg_mr): HCOMM_ERR_MMAP, naming
  /// `ulimit -l` when the locked-memory limit is the likely cause.
  Status registration_error(size_t bytes, int err) const;
  /// "rxe0 port 1 GID 3 ::ffff:198.18.0.1 (veth0)": for logs and errors.
  std::string describe() const;
  /// The port's counters from sysfs (/sys/class/infiniband/NAME/ports/PORT/): packets sent and
  /// retransmitted (hw_counters: sent_pkts, completer_retry_err; or the IB port counters'
  /// port_xmit_packets) and the error counters that exist (symbol_error, port_rcv_errors,
  /// link_error_recovery, ...). The port's, not one queue pair's: every link on it shares them;
  /// read at most every kCountersEvery (the links of every peer ask each engine tick). Engine
  /// thread only.
  MediumCounters port_counters() const;
  static constexpr std::chrono::milliseconds kCountersEvery{40};
  /// The device's asynchronous events (engine thread; one engine per process).
  AsyncEventMonitor& events();

 private:
  class Registrar;
  RdmaDevice() = default;

  std::string name_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  uint8_t port_ = 1;
  int gid_index_ = -1;
  ibv_gid gid_{};
  ibv_mtu active_mtu_ = IBV_MTU_1024;
  std::string netdev_;
  std::unique_ptr<Registrar> registrar_;
  std::unique_ptr<MrCache> cache_;
  std::unique_ptr<AsyncEventMonitor> events_;
  mutable MediumCounters counters_;  // port_counters()'s last reading, and when
  mutable std::chrono::steady_clock::time_point counters_read_{};
};

/// "::ffff:198.18.0.1" (hex-free text of a GID).
std::string gid_text(const ibv_gid& gid);

}  // namespace hcomm::transport::rdma
