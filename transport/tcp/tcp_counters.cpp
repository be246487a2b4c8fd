#include "transport/tcp/tcp_counters.hpp"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace hcomm::transport::tcp {

bool read_tcp_counters(int fd, TcpCounters* out) {
  struct tcp_info info {};
  socklen_t len = sizeof(info);
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  out->segments_out = info.tcpi_segs_out;
  out->retransmits = info.tcpi_total_retrans;
  out->rtt_us = info.tcpi_rtt;
  return true;
}

}  // namespace hcomm::transport::tcp
