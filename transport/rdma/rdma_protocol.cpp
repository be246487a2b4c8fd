#include "transport/rdma/rdma_protocol.hpp"

#include <sstream>

namespace hcomm::transport::rdma {

ProtocolCaps RdmaProtocol::caps() const {
  ProtocolCaps c;
  c.max_message_bytes = RdmaLink::kSlotBytes;
  c.one_sided = true;
  c.detects_peer_failure = true;  // completion errors once the retries are exhausted
  return c;
}

Expected<std::string> RdmaProtocol::open(const ProtocolContext& context) {
  context_ = context;
  auto device =
      RdmaDevice::open(config_.rdma_device, config_.rdma_gid_index, config_.rdma_pin_budget);
  if (!device.ok()) return device.status();
  device_ = device.value();
  return device_->name() + " " + gid_text(device_->gid());
}

RdmaLinkParams RdmaProtocol::link_params(int peer) const {
  RdmaLinkParams params;
  params.my_rank = context_.rank;
  params.peer = peer;
  params.num_qps = config_.num_qps;
  params.max_inline = config_.max_inline;
  params.timeout = config_.rdma_timeout;
  params.retry_cnt = config_.rdma_retry_cnt;
  // HCOMM_RDMA_TRAFFIC_CLASS wins; else the QoS class's marking, as on TCP.
  params.traffic_class =
      config_.rdma_traffic_class != 0 ? config_.rdma_traffic_class : traffic_class_;
  params.buffers = config_.rdma_buffers == RdmaBufferMode::fixed     ? BufferMode::fixed
                   : config_.rdma_buffers == RdmaBufferMode::dynamic ? BufferMode::dynamic
                                                                     : BufferMode::zero_copy;
  return params;
}

Status RdmaProtocol::prepare(const std::vector<int>& peers, Rendezvous& rendezvous,
                             Rendezvous::Deadline deadline) {
  // One line per peer: "<peer> <endpoint>".
  std::string mine;
  for (int peer : peers) {
    auto link = RdmaLink::create(device_, link_params(peer));
    if (!link.ok()) return link.status();
    mine += std::to_string(peer) + " " + link.value()->local_endpoint().encode() + "\n";
    links_[peer] = std::move(link.value());
  }
  const std::string me = std::to_string(context_.rank);
  Status st = rendezvous.set("rdma/" + me, mine);
  if (!st.ok()) return st;
  for (int peer : peers) {
    auto theirs = rendezvous.get("rdma/" + std::to_string(peer), deadline);
    if (!theirs.ok()) return theirs.status();
    std::istringstream lines(theirs.value());
    std::string line;
    bool found = false;
    while (std::getline(lines, line)) {
      const size_t space = line.find(' ');
      if (line.substr(0, space) != me) continue;
      auto endpoint = RdmaEndpoint::decode(line.substr(space + 1));
      if (!endpoint.ok()) return endpoint.status();
      st = links_[peer]->connect(endpoint.value());
      if (!st.ok()) return st;
      found = true;
    }
    if (!found)
      return {HCOMM_ERR_INTERNAL, "rank " + std::to_string(peer) +
                                      " made no RDMA queue pairs for rank " + me +
                                      " (the ranks disagree about which protocol joins them)"};
  }
  // Nobody sends before every peer's queue pairs can receive: a message to a queue pair not yet
  // in RTR is dropped and retried, and HCOMM_RDMA_RETRY_CNT retries may not outlast a slow peer.
  st = rendezvous.set("rdma-rts/" + me, "1");
  if (!st.ok()) return st;
  for (int peer : peers) {
    auto ready = rendezvous.get("rdma-rts/" + std::to_string(peer), deadline);
    if (!ready.ok()) return ready.status();
  }
  return {};
}

std::unique_ptr<Link> RdmaProtocol::create_link(const LinkContext& context,
                                                ProgressEngine::Clock::time_point,
                                                UpCallback on_up) {
  auto it = links_.find(context.peer);
  if (it == links_.end()) {
    on_up(
        {HCOMM_ERR_INTERNAL, "no RDMA link was prepared for rank " + std::to_string(context.peer)});
    return nullptr;
  }
  std::unique_ptr<RdmaLink> link = std::move(it->second);
  links_.erase(it);
  link->start(*engine_, *context.observer, context.bytes_sent, std::move(on_up));
  return link;
}

Expected<std::string> RdmaProtocol::offer(const LinkContext& context) {
  auto link = RdmaLink::create(device_, link_params(context.peer));
  if (!link.ok()) return link.status();
  std::string endpoint = link.value()->local_endpoint().encode();
  links_[context.peer] = std::move(link.value());
  return endpoint;
}

std::unique_ptr<Link> RdmaProtocol::redial(const LinkContext& context,
                                           const std::string& peer_offer,
                                           ProgressEngine::Clock::time_point deadline,
                                           UpCallback on_up) {
  auto it = links_.find(context.peer);
  if (it == links_.end()) {
    on_up({HCOMM_ERR_INTERNAL,
           "no RDMA queue pairs were offered to rank " + std::to_string(context.peer)});
    return nullptr;
  }
  auto endpoint = RdmaEndpoint::decode(peer_offer);
  Status st = endpoint.ok() ? it->second->connect(endpoint.value()) : endpoint.status();
  if (!st.ok()) {
    links_.erase(it);
    on_up(st);
    return nullptr;
  }
  // No RTS barrier as at creation: the peer connects its half when this offer or its reply
  // reaches it, a round trip later, and the queue pairs' retries cover that.
  return create_link(context, deadline, std::move(on_up));
}

}  // namespace hcomm::transport::rdma
