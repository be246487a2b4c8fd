// The communicator behind the public class: numbers operations, picks their algorithm, builds
// their schedule and hands it to the data plane — all on the calling thread, under one lock, so
// that operations start in the order they were called (ranks agree on numbers by calling
// collectives in the same order).
#pragma once

#include <atomic>
#include <climits>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "actors/communicator_control.hpp"
#include "api/operation_builder.hpp"
#include "collectives/algorithm_selector.hpp"
#include "collectives/frame_codec.hpp"
#include "collectives/operation.hpp"
#include "collectives/slot_collectives.hpp"
#include "core/completion.hpp"
#include "hcomm/communicator.hpp"
#include "hcomm/config.hpp"
#include "hcomm/work.hpp"
#include "observe/comm_trace.hpp"

namespace hcomm::api {

class CommunicatorImpl {
 public:
  CommunicatorImpl(Config cfg, std::unique_ptr<actors::CommunicatorControl> control,
                   collectives::AlgorithmChoice forced, std::vector<int> ring_order);
  ~CommunicatorImpl();

  const Config& config() const { return cfg_; }
  /// The operations of the public calls, their arguments checked.
  const OperationBuilder& build() const { return build_; }
  /// The communicator's compression mode (Communicator::set_compression); any thread.
  void set_compression(Compression mode) { compression_.store(mode, std::memory_order_relaxed); }
  Compression compression() const { return compression_.load(std::memory_order_relaxed); }
  int rank() const { return cfg_.rank; }
  int size() const { return cfg_.world_size; }

  /// Starts `op` (or fails it at once when it was rejected and concerns nobody else).
  /// `caller_waits`: the caller waits for it next, and moves it on meanwhile (the slot board's
  /// operations always; over links when its wait spins, Config::spin_us).
  Work submit(collectives::OperationPtr op, bool caller_waits = false);
  /// Whether `op` runs on the slot board (a one-host communicator's small collectives; the same
  /// answer on every rank for the same call).
  bool uses_slots(const collectives::Operation& op) const;
  /// uses_slots(), and through the slot board's staging areas (StagedAllreduce).
  bool uses_staging(const collectives::Operation& op) const {
    return uses_slots(op) && slots_->stages(op);
  }
  /// submit() and wait for config().op_timeout.
  Status run(collectives::OperationPtr op);
  /// The sends to self of a batch copied into its receives from self (matched by tag, in order);
  /// completed at once, with an error if one is left unmatched or the sizes differ.
  std::shared_ptr<core::Completion> copy_to_self(const std::vector<const PointToPointOp*>& sends,
                                                 const std::vector<const PointToPointOp*>& recvs);
  /// A Work that completes when every one of `works` has; the first failure is its status.
  Work combine(const std::vector<Work>& works);

  const collectives::AlgorithmSelector& selector() const { return *selector_; }
  const actors::CommunicatorControl& control() const { return *control_; }
  actors::CommunicatorControl& control_mutable() { return *control_; }
  /// Ranks in ring order (topology-aware); empty when that is 0, 1, ..., size-1.
  const std::vector<int>& ring_order() const { return ring_order_; }
  /// Measures the link and reduction costs the selector uses (collective; see calibration.cpp).
  Status calibrate();
  /// The launching mistake (HCOMM_ERR_INVALID_ARG) a late duplicate posted, as the observer
  /// finds it within `wait`; OK when none shows. For a creation that failed after the
  /// rendezvous: a peer that gave up on such a mistake must be reported as the mistake.
  Status launch_error_within(std::chrono::milliseconds wait) const;
  /// Communicator::abort(): fails what runs and everything submitted later.
  void abort(const std::string& reason);
  /// A send or receive of `bytes` bytes with `peer` on hcomm's own tag (kReservedTag), for
  /// calibration and shrink(): user tags never meet it.
  /// `caller_waits` as for submit().
  Work reserved_transfer(collectives::OpKind kind, void* buf, size_t bytes, int peer,
                         bool caller_waits = false);
  static constexpr int kReservedTag = INT_MAX;
  /// Communicator::shrink().
  Expected<Config> shrunk_config();

 private:
  class EngineDriver;
  void log_choice(const collectives::Operation& op,
                  const collectives::AlgorithmSelector::Choice& c) const;
  /// The cost model for `cost` (across hosts, or the one link kind), `local_cost` (within a
  /// host, when measured apart) and this communicator's host layout.
  void make_selector(const collectives::LinkCost& cost,
                     std::optional<collectives::LinkCost> local_cost = {});
  /// Numbers, plans and hands `op` to the data plane; under submit_mutex_.
  void start_locked(collectives::OperationPtr op, bool caller_waits);
  /// A receive from any source: waits in any_source_ until match_any_source() binds it.
  void post_any_source(collectives::OperationPtr op);
  /// Engine thread: binds waiting receives from any source to messages that arrived.
  void match_any_source(dataplane::DataPlane& plane);
  /// Completes every waiting receive from any source with `status`.
  void fail_any_source(const Status& status);

  Config cfg_;
  OperationBuilder build_;
  std::unique_ptr<actors::CommunicatorControl> control_;
  collectives::AlgorithmChoice forced_;
  std::unique_ptr<collectives::AlgorithmSelector> selector_;
  std::shared_ptr<EngineDriver> driver_;
  std::vector<int> ring_order_;  // empty: the identity
  std::vector<int> host_of_;     // host index per rank, by lowest rank; empty: one host
  std::shared_ptr<collectives::SlotCollectives> slots_;  // one-host communicators: small
                                                         // collectives and larger allreduces
  std::atomic<Compression> compression_{Compression::none};
  collectives::FrameCodec::InputResiduals input_residuals_;  // under submit_mutex_
  std::mutex submit_mutex_;  // numbering, planning and hand-off happen in call order
  std::mutex abort_mutex_;
  Status aborted_;  // set by abort()
  uint64_t next_seq_ = 1;
  std::map<std::pair<int, int>, uint32_t> sends_, recvs_;  // (peer, tag) → messages so far
  std::deque<collectives::OperationPtr> any_source_;       // under submit_mutex_, posting order
  std::atomic<bool> any_source_waiting_{false};            // !any_source_.empty()
  std::shared_ptr<observe::CommTrace> trace_;  // the flight recorder and counters; may be null
};

}  // namespace hcomm::api
