#include "dataplane/data_plane.hpp"

#include <algorithm>

#include "core/log.hpp"

namespace hcomm::dataplane {

DataPlane::DataPlane(transport::ProgressEngine& engine,
                     std::vector<std::unique_ptr<transport::LinkProtocol>> protocols,
                     DataPlaneParams params)
    : engine_(engine),
      params_(std::move(params)),
      protocols_(std::move(protocols)),
      executor_(params_.comm_id, params_.rank, size()),
      links_(static_cast<size_t>(size())),
      reliable_(static_cast<size_t>(size()), nullptr),
      on_down_(static_cast<size_t>(size())),
      bytes_sent_(new std::atomic<uint64_t>[static_cast<size_t>(size())]()),
      paced_(static_cast<size_t>(size())),
      carrier_(new std::atomic<int>[static_cast<size_t>(size())]()),
      lost_(new std::atomic<bool>[static_cast<size_t>(size())]()) {
  executor_.set_activity_counter(&engine_.active_operations());
  if (params_.compression) executor_.set_compression_policy(params_.compression);
}

DataPlane::~DataPlane() {
  // Destroyed before close() finished (its caller stopped waiting): its poll must not fire.
  if (poll_timer_ != 0) engine_.cancel_timer(poll_timer_);
  if (params_.gate != nullptr) params_.gate->remove_class(params_.comm_uid);
  executor_.fail_all({HCOMM_ERR_ABORTED, "the communicator was destroyed"});
  links_.clear();
  for (auto& p : protocols_) p->shutdown();
  protocols_.clear();
}

transport::LinkContext DataPlane::context_for(int peer) {
  const PeerPlan& plan = params_.peers[static_cast<size_t>(peer)];
  transport::LinkContext ctx;
  ctx.engine = &engine_;
  ctx.observer = this;
  ctx.comm_id = params_.comm_id;
  ctx.comm_uid = params_.comm_uid;
  ctx.my_rank = params_.rank;
  ctx.world_size = size();
  ctx.peer = peer;
  ctx.peer_address = plan.address;
  ctx.bytes_sent = &bytes_sent_[static_cast<size_t>(peer)];
  return ctx;
}

void DataPlane::connect_peer(int peer, transport::ProgressEngine::Clock::time_point deadline,
                             Callback on_up, Callback on_down) {
  const auto i = static_cast<size_t>(peer);
  on_down_[i] = std::move(on_down);
  const PeerPlan& plan = params_.peers[i];
  if (plan.reliable) return connect_reliable(peer, deadline, std::move(on_up));
  links_[i] = plan.protocol->create_link(context_for(peer), deadline, std::move(on_up));
  if (links_[i]) attach(peer, links_[i].get());
}

void DataPlane::connect_reliable(int peer, transport::ProgressEngine::Clock::time_point deadline,
                                 Callback on_up) {
  const auto i = static_cast<size_t>(peer);
  const Config& cfg = params_.config;
  const PeerPlan& plan = params_.peers[i];
  failover::ReliableLinkParams rp;
  rp.context = context_for(peer);
  rp.context.observer = nullptr;  // set per link by the ReliableLink
  rp.context.peer_address.clear();
  rp.slots[failover::kPrimary] = {plan.protocol, plan.protocol_name, plan.address};
  rp.slots[failover::kFallback] = {params_.fallback, kFallbackKey, plan.fallback_address};
  rp.keepalive_interval = cfg.keepalive_interval;
  rp.keepalive_timeout = cfg.keepalive_timeout;
  rp.phi_threshold = cfg.phi_threshold;
  rp.redial_timeout = std::max(std::chrono::milliseconds(1000), 3 * cfg.keepalive_timeout);
  rp.gray.window = cfg.gray_window;
  rp.gray.goodput_ratio = cfg.gray_goodput_pct / 100.0;
  rp.gray.loss_ratio = cfg.gray_loss_pct / 100.0;
  rp.gray.rtt_limit = cfg.gray_rtt;
  rp.probe.bytes = cfg.probe_bytes;
  rp.probe.interval = cfg.probe_interval;
  rp.probe.timeout = std::max(cfg.keepalive_timeout, 4 * cfg.probe_interval);
  rp.multipath = multipath_enabled(cfg);
  rp.multipath_min_bytes = cfg.multipath_min_bytes;
  auto link = std::make_unique<failover::ReliableLink>(std::move(rp), *this, *this, recorder_);
  reliable_[i] = link.get();
  links_[i] = std::move(link);
  attach(peer, reliable_[i]);
  reliable_[i]->establish(deadline, std::move(on_up));
}

void DataPlane::attach(int peer, transport::Link* link) {
  const auto i = static_cast<size_t>(peer);
  if (params_.gate != nullptr && params_.peers[i].paced) {
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
  if (failover::ReliableLink* link = reliable_[static_cast<size_t>(peer)]) link->command(c);
}

void DataPlane::on_channel_event(const failover::ChannelEvent& e) {
  if (e.kind == failover::ChannelEvent::Kind::switched) {
    carrier_[static_cast<size_t>(e.peer)].store(e.slot, std::memory_order_relaxed);
    if (on_fallback_) {
      bool any = false;
      for (int r = 0; r < size(); ++r)
        any |=
            reliable_[static_cast<size_t>(r)] != nullptr &&
            carrier_[static_cast<size_t>(r)].load(std::memory_order_relaxed) == failover::kFallback;
      on_fallback_(any);
    }
  }
  if (sink_) sink_(e);
}

std::string DataPlane::carrier(int peer) const {
  const PeerPlan& plan = params_.peers[static_cast<size_t>(peer)];
  if (!plan.reliable) return plan.protocol_name;
  if (lost(peer)) return "lost";
  switch (carrier_[static_cast<size_t>(peer)].load(std::memory_order_relaxed)) {
    case failover::kPrimary:
      return plan.protocol_name;
    case failover::kFallback:
      return kFallbackKey;
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
