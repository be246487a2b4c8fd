// dataplane/: the engine-side objects of one communicator and how creation decides them.
//
// The DataPlane owns the protocols a communicator opened, one link per peer — made by the
// protocol its PeerPlan names; under failover a ReliableLink over that link and a TCP fallback;
// through the QoS send gate when the plan says it is paced — and the schedule executor that runs
// operations over them. It lives on the progress engine's thread: every method but the "any
// thread" ones is called there; the actors reach it only through ProgressEngine::post().
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/schedule_executor.hpp"
#include "dataplane/peer_plan.hpp"
#include "failover/failover_recorder.hpp"
#include "failover/link_supervisor.hpp"
#include "failover/reliable_link.hpp"
#include "hcomm/config.hpp"
#include "qos/send_gate.hpp"
#include "transport/link.hpp"
#include "transport/link_protocol.hpp"
#include "transport/progress_engine.hpp"

namespace hcomm::dataplane {

struct DataPlaneParams {
  uint32_t comm_id = 0;
  uint64_t comm_uid = 0;
  int rank = 0;
  /// By rank (this one included).
  std::vector<PeerPlan> peers;
  /// The fallback links' protocol (one of the owned protocols; null without failover).
  transport::LinkProtocol* fallback = nullptr;
  Config config;  ///< keep-alive and reconnection settings
  /// QoS: the process's send gate; the communicator's class in it is comm_uid.
  qos::SendGate* gate = nullptr;
  /// Which codec each frame travels with (shared with the API thread, which changes the link
  /// speed after calibration); null: nothing is compressed.
  std::shared_ptr<collectives::CompressionPolicy> compression;
};

class DataPlane final : public transport::LinkObserver, public failover::ChannelListener {
 public:
  using Callback = std::function<void(const Status&)>;
  using EventSink = std::function<void(const failover::ChannelEvent&)>;

  /// `protocols`: every protocol opened for this communicator, the fallback's included (owned
  /// from now on; shut down when the plane is destroyed).
  DataPlane(transport::ProgressEngine& engine,
            std::vector<std::unique_ptr<transport::LinkProtocol>> protocols,
            DataPlaneParams params);
  ~DataPlane();

  int size() const { return static_cast<int>(params_.peers.size()); }

  /// Establishes the link to `peer`; `on_up` runs once with the outcome, `on_down` whenever the
  /// established link fails later.
  void connect_peer(int peer, transport::ProgressEngine::Clock::time_point deadline, Callback on_up,
                    Callback on_down);
  /// Runs an operation.
  void start(collectives::OperationPtr op, collectives::Schedule schedule) {
    executor_.start(std::move(op), std::move(schedule));
  }
  /// The executor, for what the API layer keeps on the engine side (receives from any source).
  collectives::ScheduleExecutor& executor() { return executor_; }
  /// Fails what is running, says goodbye to every peer and calls `done` once each peer has
  /// closed too or `grace` has passed.
  void close(std::chrono::milliseconds grace, std::function<void()> done);
  /// Communicator::abort().
  void abort(const std::string& reason);
  /// Marks every link's packets (IP TOS) from now on.
  void set_traffic_class(int tos);
  /// Before connect_peer(): told whether traffic to some peer goes over its fallback link.
  void set_fallback_listener(std::function<void(bool)> listener) {
    on_fallback_ = std::move(listener);
  }

  // ---- failover
  /// Before connect_peer(): where the ReliableLinks' events go (the link supervisor actor).
  void set_event_sink(EventSink sink) { sink_ = std::move(sink); }
  /// The supervisor's decision for `peer`.
  void command(int peer, const failover::SupervisorCommand& command);
  void on_channel_event(const failover::ChannelEvent& event) override;
  /// Any thread: what carries traffic to `peer` now (see RankInfo::transport).
  std::string carrier(int peer) const;
  /// Any thread: whether traffic to `peer` goes over its fallback link now.
  bool on_fallback(int peer) const {
    return carrier_[static_cast<size_t>(peer)].load(std::memory_order_relaxed) ==
           failover::kFallback;
  }
  failover::FailoverRecorder& recorder() { return recorder_; }
  /// Any thread: whether `peer` was lost (HCOMM_ERR_PEER_LOST).
  bool lost(int peer) const {
    return lost_[static_cast<size_t>(peer)].load(std::memory_order_relaxed);
  }

  // transport::LinkObserver: the executor's business, plus telling the connection manager.
  void on_remote_abort(int peer, uint32_t comm_id, uint64_t op_seq,
                       const std::string& reason) override {
    executor_.on_remote_abort(peer, comm_id, op_seq, reason);
  }
  bool should_drop(const transport::FrameHeader& header) override {
    return executor_.should_drop(header);
  }
  void on_link_failed(int peer, const Status& status, bool graceful) override;

  /// Any thread: payload bytes sent to `peer` so far.
  uint64_t bytes_sent(int peer) const {
    return bytes_sent_[static_cast<size_t>(peer)].load(std::memory_order_relaxed);
  }

 private:
  transport::LinkContext context_for(int peer);
  void poll_closed(transport::ProgressEngine::Clock::time_point deadline,
                   std::function<void()> done);
  void connect_reliable(int peer, transport::ProgressEngine::Clock::time_point deadline,
                        Callback on_up);
  /// Hands `link` to the executor, through the QoS gate when the peer is paced.
  void attach(int peer, transport::Link* link);

  transport::ProgressEngine& engine_;
  DataPlaneParams params_;
  std::vector<std::unique_ptr<transport::LinkProtocol>> protocols_;
  collectives::ScheduleExecutor executor_;
  std::vector<std::unique_ptr<transport::Link>> links_;
  std::vector<failover::ReliableLink*> reliable_;  // by peer, into links_; null: none
  std::vector<Callback> on_down_;
  std::unique_ptr<std::atomic<uint64_t>[]> bytes_sent_;  // by peer
  failover::FailoverRecorder recorder_;
  EventSink sink_;
  std::function<void(bool)> on_fallback_;
  std::vector<std::unique_ptr<qos::PacedLink>> paced_;  // by peer, wrapping links_
  std::unique_ptr<std::atomic<int>[]> carrier_;  // by peer: the slot carrying traffic, -1: none
  std::unique_ptr<std::atomic<bool>[]> lost_;    // by peer
  bool aborted_ = false;
  transport::ProgressEngine::TimerId poll_timer_ = 0;  // close()'s poll for the peers' goodbyes
};

}  // namespace hcomm::dataplane
