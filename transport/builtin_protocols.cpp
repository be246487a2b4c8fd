// hcomm's own protocols enter the registry with the same rules as an application's, with
// preferences that make automatic choice pick shared memory on
// one host, RDMA where both ranks have a device, and TCP otherwise.
#include "transport/protocol_registry.hpp"
#include "transport/rdma/rdma_protocol.hpp"
#include "transport/shm/shm_protocol.hpp"
#include "transport/tcp/tcp_protocol.hpp"

namespace hcomm::transport {

void register_builtin_protocols() {
  register_link_protocol(
      "shm", [] { return std::make_unique<shm::ShmProtocol>(); }, 300);
  register_link_protocol(
      "rdma", [] { return std::make_unique<rdma::RdmaProtocol>(); }, 200);
  register_link_protocol(
      "tcp", [] { return std::make_unique<tcp::TcpProtocol>(); }, 100);
}

}  // namespace hcomm::transport
