#include "dataplane/peer_plan.hpp"

#include "core/parse.hpp"

namespace hcomm::dataplane {

std::string fallback_interface(const Config& cfg) {
  if (!cfg.fallback_ifname.empty()) return cfg.fallback_ifname;
  const auto names = core::split_list(cfg.socket_ifname);
  return names.size() >= 2 ? names[1] : "";
}

bool multipath_enabled(const Config& cfg) {
  switch (cfg.multipath) {
    case MultipathMode::on:
      return true;
    case MultipathMode::off:
      return false;
    case MultipathMode::automatic:
      return cfg.fallback_ifname.empty() && core::split_list(cfg.socket_ifname).size() >= 2;
  }
  return false;
}

Expected<std::vector<PeerPlan>> plan_peers(const Config& cfg, int my_rank,
                                           const std::vector<RankRecord>& records,
                                           const std::vector<OpenedProtocol>& protocols,
                                           bool has_fallback) {
  std::vector<PeerPlan> plans(records.size());
  const RankRecord& mine = records[static_cast<size_t>(my_rank)];
  for (size_t i = 0; i < records.size(); ++i) {
    PeerPlan& p = plans[i];
    p.rank = static_cast<int>(i);
    p.record = records[i];
    if (p.rank == my_rank) continue;
    const auto& theirs = p.record.addresses;
    for (const OpenedProtocol& opened : protocols) {
      auto it = theirs.find(opened.name);
      if (it == theirs.end()) continue;
      if (!opened.protocol->reaches(p.rank, p.record.host_id, it->second)) continue;
      p.protocol = opened.protocol.get();
      p.protocol_name = opened.name;
      p.address = it->second;
      break;
    }
    if (p.protocol == nullptr)
      return Status{HCOMM_ERR_INVALID_ARG,
                    "HCOMM_TRANSPORT=" + cfg.transport + ", but that does not reach rank " +
                        std::to_string(p.rank) + " on host " + p.record.host_name + " (" +
                        p.record.host_id + ") from this one (" + mine.host_name +
                        "): use HCOMM_TRANSPORT=auto, or a transport every pair of ranks has"};
    const ProtocolCaps caps = p.protocol->caps();
    p.paced = caps.paced;
    auto fallback = theirs.find(kFallbackKey);
    if (!has_fallback || fallback == theirs.end()) continue;
    auto mode = theirs.find(kFailoverKey);
    const bool both_on = cfg.failover == FailoverMode::on && mode != theirs.end() &&
                         mode->second == to_string(FailoverMode::on);
    if (caps.fails_only_with_process && !both_on) continue;
    p.reliable = true;
    p.fallback_address = fallback->second;
  }
  return plans;
}

}  // namespace hcomm::dataplane
