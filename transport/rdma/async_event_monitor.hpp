// The device's asynchronous events (ibv_get_async_event) as immediate link faults: a port that
// goes down (IBV_EVENT_PORT_ERR), a device that dies, or a queue pair the device put in error.
// Without them a link would notice only when its next send exhausts its retries, or when the
// keep-alive runs out. One per device and progress engine; links subscribe while they run.
// Engine thread only.
#pragma once

#include <infiniband/verbs.h>

#include <string>
#include <vector>

#include "transport/progress_engine.hpp"

namespace hcomm::transport::rdma {

/// What a subscriber hears.
class AsyncEventListener {
 public:
  /// The device or its port failed: every link over it is affected.
  virtual void on_device_fault(const std::string& what) = 0;
  /// `qp` failed; subscribers ignore queue pairs that are not theirs.
  virtual void on_qp_fault(ibv_qp* qp, const std::string& what) = 0;

 protected:
  ~AsyncEventListener() = default;
};

class AsyncEventMonitor final : public FdHandler {
 public:
  AsyncEventMonitor(ibv_context* context, uint8_t port, std::string device_name);
  ~AsyncEventMonitor();

  /// The engine watches the device's event fd while anyone subscribes.
  void subscribe(ProgressEngine& engine, AsyncEventListener* listener);
  void unsubscribe(AsyncEventListener* listener);

  void on_events(int fd, uint32_t events) override;

 private:
  ibv_context* context_;
  const uint8_t port_;
  const std::string device_name_;
  ProgressEngine* engine_ = nullptr;
  std::vector<AsyncEventListener*> listeners_;
};

}  // namespace hcomm::transport::rdma
