#include "transport/rdma/async_event_monitor.hpp"

#include <fcntl.h>

#include <algorithm>

#include "core/log.hpp"

namespace hcomm::transport::rdma {

AsyncEventMonitor::AsyncEventMonitor(ibv_context* context, uint8_t port, std::string device_name)
    : context_(context), port_(port), device_name_(std::move(device_name)) {
  // Drained until EAGAIN from the engine: it must never block there.
  const int flags = fcntl(context_->async_fd, F_GETFL);
  fcntl(context_->async_fd, F_SETFL, flags | O_NONBLOCK);
}

AsyncEventMonitor::~AsyncEventMonitor() {
  if (engine_ != nullptr) engine_->remove_fd(context_->async_fd);
}

void AsyncEventMonitor::subscribe(ProgressEngine& engine, AsyncEventListener* listener) {
  if (engine_ == nullptr) {
    engine_ = &engine;
    engine_->add_fd(context_->async_fd, EPOLLIN, this);
  }
  listeners_.push_back(listener);
}

void AsyncEventMonitor::unsubscribe(AsyncEventListener* listener) {
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), listener), listeners_.end());
  if (listeners_.empty() && engine_ != nullptr) {
    engine_->remove_fd(context_->async_fd);
    engine_ = nullptr;
  }
}

void AsyncEventMonitor::on_events(int, uint32_t) {
  ibv_async_event event{};
  while (ibv_get_async_event(context_, &event) == 0) {
    const ibv_event_type type = event.event_type;
    ibv_qp* qp = nullptr;
    int port = 0;
    switch (type) {
      case IBV_EVENT_QP_FATAL:
      case IBV_EVENT_QP_REQ_ERR:
      case IBV_EVENT_QP_ACCESS_ERR:
      case IBV_EVENT_PATH_MIG_ERR:
        qp = event.element.qp;
        break;
      case IBV_EVENT_PORT_ERR:
      case IBV_EVENT_PORT_ACTIVE:
      case IBV_EVENT_GID_CHANGE:
        port = event.element.port_num;
        break;
      default:
        break;
    }
    ibv_ack_async_event(&event);
    const std::string what =
        device_name_ + ": " + ibv_event_type_str(type) + " (asynchronous event)";
    HCOMM_LOG(info, core::log::kNet, "%s", what.c_str());
    // Listeners may unsubscribe while they are told: iterate over a copy.
    const auto listeners = listeners_;
    if (qp != nullptr) {
      for (auto* l : listeners) l->on_qp_fault(qp, what);
    } else if (type == IBV_EVENT_DEVICE_FATAL || (type == IBV_EVENT_PORT_ERR && port == port_)) {
      for (auto* l : listeners) l->on_device_fault(what);
    }
  }
}

}  // namespace hcomm::transport::rdma
