#include "dataplane/creation_phases.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <random>
#include <sstream>

#include "bootstrap/interface_address.hpp"
#include "bootstrap/launch_env.hpp"
#include "bootstrap/store_rendezvous.hpp"
#include "core/log.hpp"
#include "dataplane/peer_plan.hpp"
#include "qos/marking.hpp"
#include "transport/protocol_registry.hpp"
#include "transport/tcp/tcp_protocol.hpp"

namespace hcomm::dataplane {
namespace {

uint64_t random_uid() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

/// "rdma" -> "RDMA", for messages.
std::string upper(std::string name) {
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace

CreationPhases::CreationPhases(const Config& cfg, bootstrap::StoreClient& store, std::string prefix,
                               std::string local_ip, transport::ProgressEngine& engine,
                               Clock::time_point deadline)
    : cfg_(cfg),
      store_(store),
      prefix_(std::move(prefix)),
      local_ip_(std::move(local_ip)),
      engine_(engine),
      deadline_(deadline),
      host_(topology::this_host()),
      launch_check_(store, prefix_, cfg.rank, cfg.world_size, host_.name) {}

const std::vector<CreationPhases::Phase>& CreationPhases::all() {
  static const std::vector<Phase> phases = {
      &CreationPhases::agree_on_id,       &CreationPhases::open_protocols,
      &CreationPhases::exchange_records,  &CreationPhases::plan,
      &CreationPhases::prepare_protocols, &CreationPhases::make_slot_board,
  };
  return phases;
}

std::chrono::milliseconds CreationPhases::left() const {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()));
}

ProtocolContext CreationPhases::protocol_context(const std::string& interface_ip) const {
  ProtocolContext context;
  context.rank = cfg_.rank;
  context.world_size = cfg_.world_size;
  context.comm_uid = uid_;
  context.host_id = host_.id;
  context.interface_ip = interface_ip;
  return context;
}

// ---- 1

Status CreationPhases::agree_on_id() {
  Status claimed = launch_check_.claim(deadline_);
  if (!claimed.ok()) return claimed;
  if (cfg_.rank == 0) {
    uid_ = random_uid();
    return store_.set(prefix_ + "uid", std::to_string(uid_));
  }
  auto v = store_.get(prefix_ + "uid", left());
  if (!v.ok())
    return Status{v.status().code(),
                  "waiting for rank 0 at " + cfg_.root_addr + ": " + v.status().message()};
  uid_ = std::stoull(v.value());
  return {};
}

// ---- 2

Status CreationPhases::open_protocols() {
  const ProtocolContext context = protocol_context(local_ip_);
  const int tos = qos::tos_of(cfg_.qos);
  std::string names = Config::kAutoTransport;
  for (const auto& entry : transport::registered()) {
    names += ", " + entry.name;
    const bool forced = entry.name == cfg_.transport;
    if (!cfg_.auto_transport() && !forced) continue;
    auto made = transport::make_protocol(entry);
    if (!made.ok()) return made.status();
    OpenedProtocol p{entry.name, std::move(made.value()), ""};
    p.protocol->attach(engine_, cfg_, tos);
    auto address = p.protocol->open(context);
    if (!address.ok()) {
      if (forced)
        return Status{address.status().code(),
                      "HCOMM_TRANSPORT=" + cfg_.transport + ": " + address.status().message()};
      HCOMM_LOG(info, core::log::kNet, "protocol %s not used: %s", entry.name.c_str(),
                address.status().to_string().c_str());
      if (!p.protocol->caps().same_host_only)
        unavailable_.emplace_back(entry.name, address.status().message());
      continue;
    }
    p.address = address.value();
    protocols_.push_back(std::move(p));
  }
  if (protocols_.empty()) {
    if (cfg_.auto_transport())
      return Status{HCOMM_ERR_TRANSPORT, "no transport protocol could open on this rank"};
    return Status{HCOMM_ERR_INVALID_ARG, "HCOMM_TRANSPORT=" + cfg_.transport +
                                             " is not a registered protocol: use " + names};
  }
  return cfg_.failover != FailoverMode::off && cfg_.world_size > 1 ? open_fallback() : Status{};
}

Status CreationPhases::open_fallback() {
  // A TCP listener of its own, on HCOMM_FALLBACK_IFNAME's network when set (e.g. a management
  // network that survives a fabric fault), else on HCOMM_SOCKET_IFNAME's second interface.
  std::string ip = local_ip_;
  const std::string ifname = fallback_interface(cfg_);
  if (!ifname.empty()) {
    auto root = bootstrap::parse_host_port(cfg_.root_addr);
    if (!root.ok()) return root.status();
    auto a = bootstrap::pick_local_address(ifname, root->host);
    if (!a.ok())
      return Status{a.status().code(), std::string(cfg_.fallback_ifname.empty()
                                                       ? "HCOMM_SOCKET_IFNAME's second interface "
                                                       : "HCOMM_FALLBACK_IFNAME=") +
                                           ifname + ": " + a.status().message()};
    ip = a.value();
  }
  fallback_ = std::make_unique<transport::tcp::TcpProtocol>();
  fallback_->attach(engine_, cfg_, qos::tos_of(cfg_.qos));
  auto address = fallback_->open(protocol_context(ip));
  if (!address.ok())
    return Status{address.status().code(),
                  "the fallback TCP listener on " + ip + ": " + address.status().message()};
  fallback_address_ = address.value();
  fallback_raw_ = fallback_.get();
  return {};
}

// ---- 3

Status CreationPhases::exchange_records() {
  // The host key goes first and the "addr" key (its least preferred protocol's address) last: a
  // rank whose address is published has published the rest too.
  const std::string me = std::to_string(cfg_.rank);
  Status st = store_.set(prefix_ + "host/" + me, host_.id + "\n" + host_.name);
  if (!st.ok()) return st;
  std::string published;
  for (auto& p : protocols_) published += p.name + "\t" + p.address + "\n";
  if (fallback_)
    published += std::string(kFallbackKey) + "\t" + fallback_address_ + "\n" + kFailoverKey + "\t" +
                 to_string(cfg_.failover) + "\n";
  st = store_.set(prefix_ + "proto/" + me, published);
  if (!st.ok()) return st;
  st = store_.set(prefix_ + "addr/" + me, protocols_.back().address);
  if (!st.ok()) return st;
  std::vector<std::string> keys;
  for (int r = 0; r < cfg_.world_size; ++r) keys.push_back(prefix_ + "addr/" + std::to_string(r));
  std::vector<std::string> missing;
  // In slices: a launching mistake another rank found (LaunchCheck) ends the wait at once.
  for (;;) {
    st = store_.wait(keys, std::min(left(), std::chrono::milliseconds(200)), &missing);
    if (st.code() != HCOMM_ERR_TIMEOUT || Clock::now() >= deadline_) break;
    Status posted = launch_check_.posted_error();
    if (!posted.ok()) return posted;
  }
  if (!st.ok()) {
    if (st.code() != HCOMM_ERR_TIMEOUT) return st;
    std::string ranks;
    for (auto& k : missing) ranks += (ranks.empty() ? "" : ", ") + k.substr(k.rfind('/') + 1);
    return Status{HCOMM_ERR_TIMEOUT,
                  "rank(s) " + ranks + " of " + std::to_string(cfg_.world_size) +
                      " never arrived at the rendezvous " + cfg_.root_addr + " within " +
                      std::to_string(cfg_.connect_timeout.count()) +
                      " ms: start every rank (HCOMM_WORLD_SIZE=" + std::to_string(cfg_.world_size) +
                      ") or raise HCOMM_CONNECT_TIMEOUT_MS"};
  }
  records_.assign(static_cast<size_t>(cfg_.world_size), RankRecord{});
  for (int r = 0; r < cfg_.world_size; ++r) {
    RankRecord& rec = records_[static_cast<size_t>(r)];
    const std::string rank = std::to_string(r);
    auto v = store_.get(keys[static_cast<size_t>(r)], left());
    if (!v.ok()) return v.status();
    rec.endpoint = v.value();
    v = store_.get(prefix_ + "host/" + rank, left());
    if (!v.ok()) return v.status();
    const size_t nl = v.value().find('\n');
    rec.host_id = v.value().substr(0, nl);
    rec.host_name = nl == std::string::npos ? rec.host_id : v.value().substr(nl + 1);
    v = store_.get(prefix_ + "proto/" + rank, left());
    if (!v.ok()) return v.status();
    std::istringstream lines(v.value());
    for (std::string line; std::getline(lines, line);) {
      const size_t tab = line.find('\t');
      if (tab != std::string::npos) rec.addresses[line.substr(0, tab)] = line.substr(tab + 1);
    }
  }
  Status posted = launch_check_.posted_error();
  if (!posted.ok()) return posted;
  HCOMM_LOG(info, core::log::kInit, "rank %d of %d listening on %s, rendezvous %s", cfg_.rank,
            cfg_.world_size, records_[static_cast<size_t>(cfg_.rank)].endpoint.c_str(),
            cfg_.root_addr.c_str());
  return {};
}

// ---- 4

Status CreationPhases::plan() {
  auto plans = plan_peers(cfg_, cfg_.rank, records_, protocols_, fallback_ != nullptr);
  if (!plans.ok()) {
    std::string why = plans.status().message();
    for (const auto& [name, reason] : unavailable_)
      why += "; " + name + " could not open: " + reason;
    return Status{plans.status().code(), why};
  }
  peers_ = std::move(plans.value());
  // A protocol that reaches other hosts could not open here: say so once if another one carries
  // traffic to another host instead.
  if (!unavailable_.empty()) {
    for (const PeerPlan& p : peers_) {
      if (p.self() || p.record.host_id == host_.id) continue;
      static std::once_flag said;
      std::call_once(said, [&] {
        HCOMM_LOG(warn, core::log::kNet, "no %s, using %s to other hosts: %s",
                  upper(unavailable_.front().first).c_str(), upper(p.protocol_name).c_str(),
                  unavailable_.front().second.c_str());
      });
      break;
    }
  }
  return {};
}

// ---- 5

Status CreationPhases::prepare_protocols() {
  bootstrap::StoreRendezvous rendezvous(store_, prefix_);
  for (OpenedProtocol& opened : protocols_) {
    std::vector<transport::PeerAddress> carried;
    for (const PeerPlan& p : peers_)
      if (p.protocol == opened.protocol.get()) carried.push_back({p.rank, p.address});
    if (carried.empty()) continue;
    Status st = opened.protocol->prepare(carried, rendezvous, deadline_);
    if (!st.ok()) return st;
  }
  return {};
}

// ---- 6

Status CreationPhases::make_slot_board() {
  // The board is memory every rank maps: it serves a communicator whose every peer is carried
  // over memory shared between the processes.
  if (cfg_.world_size < 2 || cfg_.world_size > transport::shm::SlotBoard::kMaxRanks) return {};
  for (const PeerPlan& p : peers_) {
    if (p.self()) continue;
    const ProtocolCaps caps = p.protocol->caps();
    if (!caps.same_host_only || !caps.fails_only_with_process) return {};
  }
  // In slices, as the rendezvous: a launching mistake another rank found meanwhile (rank 0
  // then never makes the board) ends the wait at once.
  for (;;) {
    auto board = transport::shm::SlotBoard::establish(
        uid_, cfg_.rank, cfg_.world_size,
        std::min(deadline_, Clock::now() + std::chrono::milliseconds(200)));
    if (board.ok()) {
      slot_board_ = std::move(board.value());
      return {};
    }
    if (board.status().code() != HCOMM_ERR_TIMEOUT || Clock::now() >= deadline_)
      return board.status();
    Status posted = launch_check_.posted_error();
    if (!posted.ok()) return posted;
  }
}

// ---- results

std::vector<std::unique_ptr<transport::LinkProtocol>> CreationPhases::take_protocols() {
  std::vector<std::unique_ptr<transport::LinkProtocol>> owned;
  for (auto& p : protocols_) owned.push_back(std::move(p.protocol));
  if (fallback_) owned.push_back(std::move(fallback_));
  return owned;
}

int CreationPhases::local_ranks() const {
  return static_cast<int>(std::count_if(records_.begin(), records_.end(), [&](const RankRecord& r) {
    return r.host_id == host_.id;
  }));
}

}  // namespace hcomm::dataplane
