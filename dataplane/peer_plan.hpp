// What a communicator decided about each of its ranks at creation — where the rank is, which
// protocol carries it, whether a reliable channel with a fallback link protects it, whether its
// traffic is paced — as one record per rank, and the pure function that decides it from what
// every rank published at the rendezvous.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hcomm/config.hpp"
#include "hcomm/status.hpp"
#include "transport/link_protocol.hpp"

namespace hcomm::dataplane {

/// A protocol this rank opened for the communicator, and the address it published.
struct OpenedProtocol {
  std::string name;
  std::unique_ptr<transport::LinkProtocol> protocol;
  std::string address;
};

/// What a rank published at the rendezvous.
struct RankRecord {
  std::string host_id;    ///< ranks with equal ids share a host
  std::string host_name;  ///< for people
  std::string endpoint;   ///< its least preferred protocol's address (log lines)
  /// Protocol name -> address, for every protocol it opened; "tcp-fallback" and "failover" when
  /// it has a fallback listener.
  std::map<std::string, std::string> addresses;
};

/// Names a rank's record carries besides its protocols'.
inline constexpr const char* kFallbackKey = "tcp-fallback";
inline constexpr const char* kFailoverKey = "failover";

/// One rank of the communicator, as this rank sees it.
struct PeerPlan {
  int rank = -1;
  RankRecord record;
  /// The protocol that carries the rank (not owned; null for this rank) and its name ("self"
  /// for this rank), and the address the rank published for it.
  transport::LinkProtocol* protocol = nullptr;
  std::string protocol_name = "self";
  std::string address;
  /// A reliable channel with a fallback link (to fallback_address) protects the rank.
  bool reliable = false;
  std::string fallback_address;
  /// The rank's frames go through the QoS send gate.
  bool paced = false;

  bool self() const { return protocol == nullptr; }
};

/// The interface of the fallback links: HCOMM_FALLBACK_IFNAME, else HCOMM_SOCKET_IFNAME's second
/// interface when it lists two; "" for the listening interface.
std::string fallback_interface(const Config& cfg);
/// Whether reliable channels split large frames between their two links (HCOMM_MULTIPATH:
/// auto turns it on when the fallback is HCOMM_SOCKET_IFNAME's second fabric interface).
bool multipath_enabled(const Config& cfg);

/// Per rank, the most preferred of `protocols` (this rank's, most preferred first) that the rank
/// opened too and that reaches it; whether a reliable channel protects it (both ranks have a
/// fallback listener, i.e. `has_fallback` here, and the protocol's medium can fail on its own,
/// unless both ranks run HCOMM_FAILOVER=on); whether it is paced. HCOMM_ERR_INVALID_ARG naming
/// the rank when no protocol reaches it.
Expected<std::vector<PeerPlan>> plan_peers(const Config& cfg, int my_rank,
                                           const std::vector<RankRecord>& records,
                                           const std::vector<OpenedProtocol>& protocols,
                                           bool has_fallback);

}  // namespace hcomm::dataplane
