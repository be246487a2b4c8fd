#include "dataplane/data_plane.hpp"

#include "core/log.hpp"
#include "failover/reliable_link.hpp"
#include "transport/connection_link.hpp"
#include "transport/link_protocol.hpp"

namespace hcomm::dataplane {

DataPlane::DataPlane(transport::ProgressEngine& engine,
                     std::vector<std::unique_ptr<Protocol>> protocols,
                     std::vector<std::unique_ptr<Connection>> connections, DataPlaneParams params)
    : engine_(engine),
      params_(std::move(params)),
      protocols_(std::move(protocols)),
      connections_(std::move(connections)),
      executor_(params_.comm_id, params_.rank, params_.size),
      links_(static_cast<size_t>(params_.size)),
      on_down_(static_cast<size_t>(params_.size)),
      bytes_sent_(new std::atomic<uint64_t>[static_cast<size_t>(params_.size)]()),
      carrier_(new std::atomic<int>[static_cast<size_t>(params_.size)]()),
      lost_(new std::atomic<bool>[static_cast<size_t>(params_.size)]()) {
  executor_.set_activity_counter(&engine_.active_operations());
  params_.reliable.resize(static_cast<size_t>(params_.size), false);
  params_.shaped.resize(static_cast<size_t>(params_.size), false);
  paced_.resize(static_cast<size_t>(params_.size));
}

DataPlane::~DataPlane() {
  // Destroyed before close() finished (its caller stopped waiting): its poll must not fire.
  if (poll_timer_ != 0) engine_.cancel_timer(poll_timer_);
  if (params_.gate != nullptr) params_.gate->remove_class(params_.comm_uid);
  executor_.fail_all({HCOMM_ERR_ABORTED, "the communicator was destroyed"});
  links_.clear();
  for (auto& p : protocols_)
    if (auto* lp = dynamic_cast<transport::LinkProtocol*>(p.get())) lp->shutdown();
  protocols_.clear();
}

void DataPlane::connect_peer(int peer, transport::ProgressEngine::Clock::time_point deadline,
                             Callback on_up, Callback on_down) {
  const auto i = static_cast<size_t>(peer);
  on_down_[i] = std::move(on_down);
  Protocol* protocol = params_.protocol_of[i];
  if (params_.reliable[i]) return connect_reliable(peer, deadline, std::move(on_up));
  if (auto* lp = dynamic_cast<transport::LinkProtocol*>(protocol)) {
    transport::LinkContext ctx;
    ctx.engine = &engine_;
    ctx.observer = this;
    ctx.comm_id = params_.comm_id;
    ctx.comm_uid = params_.comm_uid;
    ctx.my_rank = params_.rank;
    ctx.world_size = params_.size;
    ctx.peer = peer;
    ctx.peer_address = params_.address_of[i];
    ctx.bytes_sent = &bytes_sent_[i];
    links_[i] = lp->create_link(ctx, deadline, std::move(on_up));
    if (links_[i]) attach(peer, links_[i].get());
    return;
  }
  // An application's protocol: its Connection is up already.
  links_[i] = std::make_unique<transport::ConnectionLink>(
      engine_, *this, std::move(connections_[i]), protocol->caps(), params_.protocol_name_of[i],
      params_.rank, peer, params_.comm_id, &bytes_sent_[i]);
  attach(peer, links_[i].get());
  on_up(Status{});
}

void DataPlane::connect_reliable(int peer, transport::ProgressEngine::Clock::time_point deadline,
                                 Callback on_up) {
  const auto i = static_cast<size_t>(peer);
  const Config& cfg = params_.config;
  failover::ReliableLinkParams rp;
  rp.context.engine = &engine_;
  rp.context.comm_id = params_.comm_id;
  rp.context.comm_uid = params_.comm_uid;
  rp.context.my_rank = params_.rank;
  rp.context.world_size = params_.size;
  rp.context.peer = peer;
  rp.context.bytes_sent = &bytes_sent_[i];
  Protocol* protocol = params_.protocol_of[i];
  auto* primary = dynamic_cast<transport::LinkProtocol*>(protocol);
  rp.slots[failover::kPrimary] = {primary, params_.protocol_name_of[i], params_.address_of[i]};
  rp.slots[failover::kFallback] = {params_.fallback, "tcp-fallback",
                                   params_.fallback_address_of[i]};
  rp.keepalive_interval = cfg.keepalive_interval;
  rp.keepalive_timeout = cfg.keepalive_timeout;
  rp.phi_threshold = cfg.phi_threshold;
  rp.redial_timeout = std::max(std::chrono::milliseconds(1000), 3 * cfg.keepalive_timeout);
  auto link = std::make_unique<failover::ReliableLink>(std::move(rp), *this, *this, recorder_);
  if (primary == nullptr) {
    // An application's protocol: its Connection is up already (and cannot be made again).
    link->adopt(failover::kPrimary,
                std::make_unique<transport::ConnectionLink>(
                    engine_, link->observer_for(failover::kPrimary), std::move(connections_[i]),
                    protocol->caps(), params_.protocol_name_of[i], params_.rank, peer,
                    params_.comm_id, &bytes_sent_[i]));
  }
  auto* raw = link.get();
  links_[i] = std::move(link);
  attach(peer, raw);
  raw->establish(deadline, std::move(on_up));
}

void DataPlane::attach(int peer, transport::Link* link) {
  const auto i = static_cast<size_t>(peer);
  if (params_.gate != nullptr && params_.shaped[i]) {
    paced_[i] = std::make_unique<qos::PacedLink>(*link, *params_.gate, params_.comm_uid);
    link = paced_[i].get();
  }
  executor_.set_link(peer, link);
}

void DataPlane::set_traffic_class(int tos) {
  for (auto& link : links_)
    if (link) link->set_traffic_class(tos);
}

void DataPlane::command(int peer, const failover::SupervisorCommand& c) {
  if (auto* link = dynamic_cast<failover::ReliableLink*>(links_[static_cast<size_t>(peer)].get()))
    link->command(c);
}

void DataPlane::on_channel_event(const failover::ChannelEvent& e) {
  if (e.kind == failover::ChannelEvent::Kind::switched) {
    carrier_[static_cast<size_t>(e.peer)].store(e.slot, std::memory_order_relaxed);
    if (on_fallback_) {
      bool any = false;
      for (int r = 0; r < params_.size; ++r)
        any |=
            params_.reliable[static_cast<size_t>(r)] &&
            carrier_[static_cast<size_t>(r)].load(std::memory_order_relaxed) == failover::kFallback;
      on_fallback_(any);
    }
  }
  if (sink_) sink_(e);
}

std::string DataPlane::carrier(int peer) const {
  const auto i = static_cast<size_t>(peer);
  if (peer == params_.rank) return "self";
  if (!params_.reliable[i]) return params_.protocol_name_of[i];
  if (lost(peer)) return "lost";
  switch (carrier_[i].load(std::memory_order_relaxed)) {
    case failover::kPrimary:
      return params_.protocol_name_of[i];
    case failover::kFallback:
      return "tcp-fallback";
    default:
      return "none";
  }
}

void DataPlane::abort(const std::string& reason) {
  if (aborted_) return;  // the first reason stands, and the peers heard it
  aborted_ = true;
  const Status status{HCOMM_ERR_ABORTED, "the communicator was aborted: " + reason};
  executor_.abort_all(status);
  for (auto& link : links_)
    if (link && link->is_up())
      link->send_abort(params_.comm_id, collectives::ScheduleExecutor::kAbortAll, reason);
}

void DataPlane::on_link_failed(int peer, const Status& status, bool graceful) {
  if (!graceful && status.code() == HCOMM_ERR_PEER_LOST)
    lost_[static_cast<size_t>(peer)].store(true, std::memory_order_relaxed);
  executor_.on_link_failed(peer, status, graceful);
  // A peer that destroyed its communicator is no failure to report (its operations, if any,
  // have failed with the reason all the same).
  if (graceful) return;
  if (auto& cb = on_down_[static_cast<size_t>(peer)]) cb(status);
}

void DataPlane::close(std::chrono::milliseconds grace, std::function<void()> done) {
  for (auto& cb : on_down_) cb = nullptr;  // a goodbye is not a failure to report
  // Links first: one that fails its requests as it closes (shared memory) must find their
  // operations still there; fail_all() then frees what is left.
  for (auto& link : links_)
    if (link && link->is_up()) link->close();
  // Frames waiting for their QoS turn belong to the operations failed next.
  if (params_.gate != nullptr) params_.gate->remove_class(params_.comm_uid);
  executor_.fail_all({HCOMM_ERR_ABORTED, "the communicator was destroyed"});
  poll_closed(transport::ProgressEngine::Clock::now() + grace, std::move(done));
}

void DataPlane::poll_closed(transport::ProgressEngine::Clock::time_point deadline,
                            std::function<void()> done) {
  bool all_closed = true;
  for (auto& link : links_)
    if (link && link->error().ok()) all_closed = false;
  poll_timer_ = 0;
  if (all_closed || transport::ProgressEngine::Clock::now() >= deadline) return done();
  poll_timer_ =
      engine_.add_timer(transport::ProgressEngine::Clock::now() + std::chrono::milliseconds(2),
                        [this, deadline, done = std::move(done)]() mutable {
                          poll_closed(deadline, std::move(done));
                        });
}

}  // namespace hcomm::dataplane
