#include "transport/shm/shm_protocol.hpp"

#include "transport/shm/link_segment.hpp"
#include "transport/shm/shm_link.hpp"

namespace hcomm::transport::shm {

ProtocolCaps ShmProtocol::caps() const {
  ProtocolCaps c;
  c.max_message_bytes = SIZE_MAX;
  c.detects_peer_failure = true;  // the peer's pid and start time are checked
  c.same_host_only = true;
  c.paced = false;
  c.fails_only_with_process = true;
  return c;
}

Expected<std::string> ShmProtocol::open(const ProtocolContext& context) {
  host_id_ = context.host_id;
  return host_id_;
}

bool ShmProtocol::reaches(int, const std::string& peer_host_id, const std::string&) const {
  return peer_host_id == host_id_;
}

Status ShmProtocol::prepare(const std::vector<PeerAddress>&, Rendezvous&, Rendezvous::Deadline) {
  reap_dead_segments();
  return {};
}

std::unique_ptr<Link> ShmProtocol::create_link(const LinkContext& context,
                                               ProgressEngine::Clock::time_point deadline,
                                               UpCallback on_up) {
  MediumLink::Identity id{context.my_rank, context.peer, context.comm_id, context.bytes_sent};
  auto link = std::make_unique<ShmLink>(*engine_, *context.observer, id, context.comm_uid,
                                        std::move(on_up));
  link->establish(deadline);
  return link;
}

}  // namespace hcomm::transport::shm
