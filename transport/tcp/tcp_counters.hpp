// What the kernel counts about one TCP connection (TCP_INFO), for the link health of the
// reliable channel. A file of its own: the kernel's struct tcp_info (linux/tcp.h, which has the
// segment counters) cannot be included beside glibc's netinet/tcp.h.
#pragma once

#include <cstdint>

namespace hcomm::transport::tcp {

struct TcpCounters {
  uint64_t segments_out = 0;  ///< tcpi_segs_out
  uint64_t retransmits = 0;   ///< tcpi_total_retrans
  uint32_t rtt_us = 0;        ///< tcpi_rtt: the smoothed round trip
};

/// The counters of socket `fd`; false when TCP_INFO fails (the socket is gone).
bool read_tcp_counters(int fd, TcpCounters* out);

}  // namespace hcomm::transport::tcp
