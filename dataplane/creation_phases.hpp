// The phases of creating a communicator that need no actor, in the order they run on every
// rank (actors/communicator_control.cpp runs them, then starts the actors that connect the
// links):
//   1. agree_on_id       each rank claims its rank and checks the world size (LaunchCheck); rank
//                        0 draws the communicator's uid, the others read it;
//   2. open_protocols    every protocol the configuration allows opens and gets an address; under
//                        failover a TCP listener of its own for the fallback links;
//   3. exchange_records  each rank publishes its host and addresses and reads everyone's;
//   4. plan              per rank: its protocol, reliable channel and pacing (plan_peers());
//   5. prepare_protocols each protocol prepares the peers it carries (RDMA queue pairs, an
//                        application's connections);
//   6. make_slot_board   a communicator whose ranks all share this host's memory gets its board.
// Creating thread. Every phase waits at most until the creation deadline and returns why it
// failed, saying what to do.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/store_client.hpp"
#include "dataplane/launch_check.hpp"
#include "dataplane/peer_plan.hpp"
#include "hcomm/config.hpp"
#include "hcomm/status.hpp"
#include "topology/host_identity.hpp"
#include "transport/link_protocol.hpp"
#include "transport/progress_engine.hpp"
#include "transport/shm/slot_board.hpp"

namespace hcomm::dataplane {

class CreationPhases {
 public:
  using Clock = std::chrono::steady_clock;
  using Phase = Status (CreationPhases::*)();

  /// `store` (connected to rank 0's rendezvous) outlives the phases; `prefix` is the
  /// communicator's key prefix in it; `local_ip` the address this rank listens on.
  CreationPhases(const Config& cfg, bootstrap::StoreClient& store, std::string prefix,
                 std::string local_ip, transport::ProgressEngine& engine,
                 Clock::time_point deadline);

  /// The phases in order.
  static const std::vector<Phase>& all();

  Status agree_on_id();
  Status open_protocols();
  Status exchange_records();
  Status plan();
  Status prepare_protocols();
  Status make_slot_board();

  // ---- what they found
  uint64_t uid() const { return uid_; }
  /// LaunchCheck::error_key().
  std::string launch_error_key() const { return launch_check_.error_key(); }
  const topology::HostIdentity& host() const { return host_; }
  const std::vector<PeerPlan>& peers() const { return peers_; }
  /// Every opened protocol, the fallback's last (null without failover); no longer the phases'.
  std::vector<std::unique_ptr<transport::LinkProtocol>> take_protocols();
  /// The fallback links' protocol (one of take_protocols()'); null without failover.
  transport::LinkProtocol* fallback() const { return fallback_raw_; }
  std::optional<transport::shm::SlotBoard> take_slot_board() { return std::move(slot_board_); }
  /// Ranks on this host (this one included).
  int local_ranks() const;
  /// A launching mistake another rank found since the rendezvous (LaunchCheck::posted_error()):
  /// checked once more when the links are up, so a duplicate that came late still fails both.
  Status posted_launch_error() { return launch_check_.posted_error(); }

 private:
  std::chrono::milliseconds left() const;
  /// What a protocol opened on `interface_ip` for this communicator is told.
  ProtocolContext protocol_context(const std::string& interface_ip) const;
  Status open_fallback();

  const Config& cfg_;
  bootstrap::StoreClient& store_;
  const std::string prefix_;
  const std::string local_ip_;
  transport::ProgressEngine& engine_;
  const Clock::time_point deadline_;
  const topology::HostIdentity host_;
  LaunchCheck launch_check_;
  uint64_t uid_ = 0;
  std::vector<OpenedProtocol> protocols_;  // most preferred first
  /// Protocols that could not open here although they reach other hosts, and why.
  std::vector<std::pair<std::string, std::string>> unavailable_;
  std::unique_ptr<transport::LinkProtocol> fallback_;
  transport::LinkProtocol* fallback_raw_ = nullptr;
  std::string fallback_address_;
  std::vector<RankRecord> records_;
  std::vector<PeerPlan> peers_;
  std::optional<transport::shm::SlotBoard> slot_board_;
};

}  // namespace hcomm::dataplane
