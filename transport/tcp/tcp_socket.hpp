// transport/tcp/: the TCP transport. TcpListener accepts a communicator's incoming connections,
// TcpLink is one peer (one or more TcpStreams), TcpStream is one connection with its framing.
//
// This file: the socket-level operations they share (options, addresses, the hello handshake).
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>

#include "hcomm/status.hpp"

namespace hcomm::transport::tcp {

struct SocketOptions {
  size_t send_buf_size = 0;  ///< SO_SNDBUF, 0 = kernel default
  size_t recv_buf_size = 0;  ///< SO_RCVBUF, 0 = kernel default
  std::string congestion;    ///< TCP_CONGESTION, "" = kernel default
  int tos = 0;               ///< IP_TOS (DSCP << 2), from the communicator's QoS class
  double pacing_rate = 0;    ///< SO_MAX_PACING_RATE, bytes/s; 0 = none
};

/// IP_TOS on a socket (best effort: logged at debug when refused).
void set_socket_tos(int fd, int tos);
/// SO_MAX_PACING_RATE (TCP paces by itself since Linux 4.13); 0 lifts it. Best effort.
void set_socket_pacing(int fd, double bytes_per_second);

/// Applies O_NONBLOCK, TCP_NODELAY, the buffer sizes and the congestion control (best effort:
/// an algorithm the kernel does not offer or allow leaves its default, logged at debug).
Status configure_socket(int fd, const SocketOptions& options);
/// "a.b.c.d:port" → sockaddr_in.
bool parse_ipv4_endpoint(const std::string& endpoint, sockaddr_in* out);
std::string endpoint_string(const sockaddr_in& addr);

/// The first bytes on every connection, connector → acceptor, then echoed back as consent.
struct Hello {
  static constexpr uint32_t kMagic = 0x484d4348;  // "HCMH"
  static constexpr uint32_t kVersion = 2;
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  uint64_t comm_uid = 0;
  int32_t rank = -1;  ///< the sender's rank
  uint32_t stream_index = 0;
  uint32_t num_streams = 0;
  uint32_t world_size = 0;
  /// Which making of the link this connection is for (failover reconnects it): a connection of
  /// an earlier attempt, late through a flapping network, must not join a newer link.
  uint32_t generation = 0;
  uint32_t flags = 0;  ///< kFlagTls: the sender encrypts the connection (HCOMM_TLS=1)
  static constexpr uint32_t kFlagTls = 1;
};
static_assert(sizeof(Hello) == 40, "the hello is 40 bytes on the wire");

}  // namespace hcomm::transport::tcp
