#include "transport/rdma/rdma_protocol.hpp"

#include <sstream>

namespace hcomm::transport::rdma {

ProtocolCaps RdmaProtocol::caps() const {
  ProtocolCaps c;
  c.max_message_bytes = QueuePairSet::kSlotBytes;
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

QueuePairParams RdmaProtocol::queue_pair_params() const {
  QueuePairParams params;
  params.num_qps = config_.num_qps;
  params.max_inline = config_.max_inline;
  params.timeout = config_.rdma_timeout;
  params.retry_cnt = config_.rdma_retry_cnt;
  // HCOMM_RDMA_TRAFFIC_CLASS wins; else the QoS class's marking, as on TCP.
  params.traffic_class =
      config_.rdma_traffic_class != 0 ? config_.rdma_traffic_class : traffic_class_;
  return params;
}

Status RdmaProtocol::prepare(const std::vector<PeerAddress>& peers, Rendezvous& rendezvous,
                             Rendezvous::Deadline deadline) {
  // One line per peer: "<peer> <endpoint>".
  std::string mine;
  for (const PeerAddress& p : peers) {
    auto qps = QueuePairSet::create(device_, queue_pair_params(), p.rank);
    if (!qps.ok()) return qps.status();
    mine += std::to_string(p.rank) + " " + qps.value()->local_endpoint().encode() + "\n";
    prepared_[p.rank] = std::move(qps.value());
  }
  const std::string me = std::to_string(context_.rank);
  Status st = rendezvous.set("rdma/" + me, mine);
  if (!st.ok()) return st;
  for (const PeerAddress& p : peers) {
    const int peer = p.rank;
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
      st = prepared_[peer]->connect(endpoint.value());
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
  for (const PeerAddress& p : peers) {
    auto ready = rendezvous.get("rdma-rts/" + std::to_string(p.rank), deadline);
    if (!ready.ok()) return ready.status();
  }
  return {};
}

std::unique_ptr<Link> RdmaProtocol::create_link(const LinkContext& context,
                                                ProgressEngine::Clock::time_point,
                                                UpCallback on_up) {
  auto it = prepared_.find(context.peer);
  if (it == prepared_.end()) {
    on_up(
        {HCOMM_ERR_INTERNAL, "no RDMA link was prepared for rank " + std::to_string(context.peer)});
    return nullptr;
  }
  std::unique_ptr<QueuePairSet> qps = std::move(it->second);
  prepared_.erase(it);
  MediumLink::Identity id{context.my_rank, context.peer, context.comm_id, context.bytes_sent};
  return std::make_unique<RdmaLink>(*engine_, *context.observer, id, std::move(qps),
                                    config_.rdma_buffers, std::move(on_up));
}

Expected<std::string> RdmaProtocol::offer(const LinkContext& context) {
  auto qps = QueuePairSet::create(device_, queue_pair_params(), context.peer);
  if (!qps.ok()) return qps.status();
  std::string endpoint = qps.value()->local_endpoint().encode();
  prepared_[context.peer] = std::move(qps.value());
  return endpoint;
}

std::unique_ptr<Link> RdmaProtocol::redial(const LinkContext& context,
                                           const std::string& peer_offer,
                                           ProgressEngine::Clock::time_point deadline,
                                           UpCallback on_up) {
  auto it = prepared_.find(context.peer);
  if (it == prepared_.end()) {
    on_up({HCOMM_ERR_INTERNAL,
           "no RDMA queue pairs were offered to rank " + std::to_string(context.peer)});
    return nullptr;
  }
  auto endpoint = RdmaEndpoint::decode(peer_offer);
  Status st = endpoint.ok() ? it->second->connect(endpoint.value()) : endpoint.status();
  if (!st.ok()) {
    prepared_.erase(it);
    on_up(st);
    return nullptr;
  }
  // No RTS barrier as at creation: the peer connects its half when this offer or its reply
  // reaches it, a round trip later, and the queue pairs' retries cover that.
  return create_link(context, deadline, std::move(on_up));
}

}  // namespace hcomm::transport::rdma
