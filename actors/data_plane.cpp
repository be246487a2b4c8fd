#include "actors/data_plane.hpp"

#include "log/log.hpp"

namespace hcomm::actors {

DataPlane::DataPlane(transport::ProgressEngine& engine,
                     std::unique_ptr<transport::tcp::TcpListener> listener, DataPlaneParams params)
    : engine_(engine),
      params_(params),
      listener_(std::move(listener)),
      executor_(params.comm_id, params.rank, params.size),
      links_(static_cast<size_t>(params.size)),
      on_down_(static_cast<size_t>(params.size)),
      bytes_sent_(new std::atomic<uint64_t>[static_cast<size_t>(params.size)]()) {
  executor_.set_activity_counter(&engine_.active_operations());
  if (listener_) listener_->start();
}

DataPlane::~DataPlane() {
  executor_.fail_all({HCOMM_ERR_ABORTED, "the communicator was destroyed"});
  links_.clear();
  listener_.reset();
}

void DataPlane::connect_peer(int peer, const std::string& endpoint,
                             transport::ProgressEngine::Clock::time_point deadline, Callback on_up,
                             Callback on_down) {
  auto& link = links_[static_cast<size_t>(peer)];
  on_down_[static_cast<size_t>(peer)] = std::move(on_down);
  if (peer < static_cast<int>(params_.shm_peers.size()) &&
      params_.shm_peers[static_cast<size_t>(peer)]) {
    transport::shm::ShmLinkParams p;
    p.comm_id = params_.comm_id;
    p.comm_uid = params_.comm_uid;
    p.my_rank = params_.rank;
    p.peer = peer;
    p.bytes_sent = &bytes_sent_[static_cast<size_t>(peer)];
    auto shm = std::make_unique<transport::shm::ShmLink>(engine_, p, *this, std::move(on_up));
    executor_.set_link(peer, shm.get());
    auto* raw = shm.get();
    link = std::move(shm);
    raw->establish(deadline);
    return;
  }
  transport::tcp::TcpLinkParams p;
  p.comm_id = params_.comm_id;
  p.comm_uid = params_.comm_uid;
  p.my_rank = params_.rank;
  p.world_size = params_.size;
  p.peer = peer;
  p.peer_endpoint = endpoint;
  p.num_streams = params_.streams_per_peer;
  p.socket_options = params_.socket_options;
  p.bytes_sent = &bytes_sent_[static_cast<size_t>(peer)];
  auto tcp = std::make_unique<transport::tcp::TcpLink>(engine_, p, *this, std::move(on_up));
  executor_.set_link(peer, tcp.get());
  auto* raw = tcp.get();
  link = std::move(tcp);
  // The higher rank connects, the lower one accepts: exactly one connection set per pair.
  if (params_.rank > peer) {
    raw->connect(deadline);
  } else {
    raw->expect(deadline);
    listener_->route(peer, raw);
  }
}

void DataPlane::on_link_failed(int peer, const Status& status, bool graceful) {
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
  executor_.fail_all({HCOMM_ERR_ABORTED, "the communicator was destroyed"});
  poll_closed(transport::ProgressEngine::Clock::now() + grace, std::move(done));
}

void DataPlane::poll_closed(transport::ProgressEngine::Clock::time_point deadline,
                            std::function<void()> done) {
  bool all_closed = true;
  for (auto& link : links_)
    if (link && link->error().ok()) all_closed = false;
  if (all_closed || transport::ProgressEngine::Clock::now() >= deadline) return done();
  engine_.add_timer(transport::ProgressEngine::Clock::now() + std::chrono::milliseconds(2),
                    [this, deadline, done = std::move(done)]() mutable {
                      poll_closed(deadline, std::move(done));
                    });
}

}  // namespace hcomm::actors
