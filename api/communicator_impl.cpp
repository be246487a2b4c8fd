#include "api/communicator_impl.hpp"

#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "collectives/algorithms.hpp"
#include "collectives/frame_codec.hpp"
#include "core/log.hpp"
#include "dataplane/data_plane.hpp"
#include "observe/observer.hpp"

namespace hcomm::api {

/// Lets a waiting thread run the engine for its spin budget.
class CommunicatorImpl::EngineDriver final : public core::ProgressDriver {
 public:
  EngineDriver(actors::CommunicatorControl& control, std::chrono::microseconds spin)
      : control_(control), spin_(spin) {}
  /// Whether a waiting thread drives at all (else it leaves progress to the engine thread).
  bool spins() const { return spin_.count() > 0; }
  void drive(const core::Completion& c, std::chrono::steady_clock::time_point deadline) override {
    if (!spins()) return;
    auto until = std::min(deadline, std::chrono::steady_clock::now() + spin_);
    control_.drive_until([&c] { return c.done(); }, until);
  }

 private:
  actors::CommunicatorControl& control_;
  std::chrono::microseconds spin_;
};

namespace {

/// An asynchronous operation of at least this many bytes wakes the engine thread at once, so
/// that it moves while the caller computes (DDP's overlapped buckets). A smaller one does not:
/// it is usually waited for a moment later, and the wake-up would cost that wait more than the
/// operation takes (an 8-byte allreduce over the slot board: 3 us alone, ~35 us with it). Over
/// links it rings an engine asleep in epoll (Waker::nearby); on the slot board its caller's
/// wait or test moves it.
constexpr uint64_t kWakeEngineBytes = 64 * 1024;

/// Point-to-point operations are keyed by (tag, direction, n-th message of that tag in that
/// direction between the pair): the sender and the receiver count alike. The direction (bit 31:
/// the lower rank sends) keeps a pair's two directions apart, so that an abort notice for one
/// never fails the other; the top bit keeps them all apart from collective numbers.
uint64_t p2p_key(int tag, bool lower_sends, uint32_t nth) {
  return (uint64_t{1} << 63) |
         (static_cast<uint64_t>(static_cast<uint32_t>(tag) & 0x7fffffffu) << 32) |
         (lower_sends ? uint64_t{1} << 31 : 0) | (nth & 0x7fffffffu);
}
int p2p_tag(uint64_t key) {
  return static_cast<int>((key >> 32) & 0x7fffffffu);
}
uint32_t p2p_nth(uint64_t key) {
  return static_cast<uint32_t>(key & 0x7fffffffu);
}

/// Whether this host has a core beyond one per local rank: an engine thread woken for an
/// operation then runs beside the ranks' application threads, not in their place.
bool spare_core(int local_ranks) {
  return static_cast<unsigned>(local_ranks) < std::max(1u, std::thread::hardware_concurrency());
}

std::chrono::microseconds spin_budget(const Config& cfg, int local_ranks) {
  if (cfg.spin_us >= 0) return std::chrono::microseconds(cfg.spin_us);
  // With a core per local rank, a waiter busy polls long enough to cover a mid-size operation;
  // with more ranks than cores, spinning takes the core a peer needs to answer.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::chrono::microseconds(static_cast<unsigned>(local_ranks) <= cores ? 500 : 0);
}

}  // namespace

CommunicatorImpl::CommunicatorImpl(Config cfg, std::unique_ptr<actors::CommunicatorControl> control,
                                   collectives::AlgorithmChoice forced, std::vector<int> ring_order)
    : cfg_(std::move(cfg)),
      build_(cfg_.rank, cfg_.world_size),
      control_(std::move(control)),
      forced_(forced),
      driver_(
          std::make_shared<EngineDriver>(*control_, spin_budget(cfg_, control_->local_ranks()))),
      ring_order_(std::move(ring_order)) {
  compression_.store(cfg_.compression, std::memory_order_relaxed);
  // Like host_of_: empty when it would say nothing (the identity), so plans skip it.
  bool identity = true;
  for (size_t p = 0; p < ring_order_.size(); ++p) identity &= ring_order_[p] == static_cast<int>(p);
  if (identity) ring_order_.clear();
  // Hosts numbered in order of their lowest rank: the same numbering on every rank.
  std::map<std::string, int> host_index;
  for (const auto& place : control_->places()) {
    auto it = host_index.emplace(place.host_id, static_cast<int>(host_index.size())).first;
    host_of_.push_back(it->second);
  }
  if (host_index.size() <= 1) host_of_.clear();
  if (auto board = control_->take_slot_board()) {
    slots_ = std::make_shared<collectives::SlotCollectives>(
        std::move(*board), cfg_.rank, spin_budget(cfg_, control_->local_ranks()));
    control_->add_poller(slots_.get());
  }
  make_selector(collectives::LinkCost{});
  {
    char id[24];
    std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(control_->uid()));
    observe::CommIdentity identity;
    identity.id = id;
    identity.rank = cfg_.rank;
    identity.size = cfg_.world_size;
    identity.root_addr = cfg_.root_addr;
    identity.op_timeout_ms = cfg_.op_timeout.count();
    identity.launch_error_key = control_->launch_error_key();
    trace_ = observe::Observer::get().attach(std::move(identity), control_.get());
  }
  if (trace_ && observe::Observer::settings().value().profile >= 2)
    control_->with_plane([trace = trace_](dataplane::DataPlane& plane) {
      plane.executor().set_transfer_observer(
          [trace](const collectives::TransferEvent& e) { trace->record_transfer(e); });
    });
  // Receives from any source look at every message that arrives before its receive.
  control_->with_plane([this](dataplane::DataPlane& plane) {
    plane.executor().set_on_unexpected_message([this, &plane] {
      if (any_source_waiting_.load(std::memory_order_acquire)) match_any_source(plane);
    });
  });
}

void CommunicatorImpl::make_selector(const collectives::LinkCost& cost,
                                     std::optional<collectives::LinkCost> local_cost) {
  std::map<int, int> ranks_per_host;
  for (int h : host_of_) ++ranks_per_host[h];
  int largest = 0;
  for (const auto& [host, ranks] : ranks_per_host) largest = std::max(largest, ranks);
  if (cost.beta_us_per_byte > 0)
    control_->compression().set_link_speed(1.0 / cost.beta_us_per_byte);
  selector_ = std::make_unique<collectives::AlgorithmSelector>(
      cfg_.world_size, cost, forced_, cfg_.chunk_bytes,
      std::max<int>(1, static_cast<int>(ranks_per_host.size())), largest, local_cost);
}

CommunicatorImpl::~CommunicatorImpl() {
  observe::Observer::get().detach(trace_);  // before the control it reads goes
  // From here on the executor's hook finds nothing waiting (it goes with the plane, which
  // control_ destroys before this object's members).
  fail_any_source(
      {HCOMM_ERR_ABORTED, "the communicator was destroyed while a receive from any source waited"});
  if (slots_) control_->remove_poller(slots_.get());
  slots_.reset();
  driver_.reset();  // Works that outlive the communicator wait without driving
  control_.reset();
}

void CommunicatorImpl::log_choice(const collectives::Operation& op,
                                  const collectives::AlgorithmSelector::Choice& c) const {
  HCOMM_LOG(debug, core::log::kColl,
            "%s #%llu: %llu bytes, %s algorithm, chunk %zu, predicted %.1f us",
            collectives::op_kind_name(op.kind), static_cast<unsigned long long>(op.seq),
            static_cast<unsigned long long>(op.agreed_bytes()), collectives::algorithm_name(c.algo),
            c.chunk_bytes, c.predicted_us);
}

Work CommunicatorImpl::submit(collectives::OperationPtr op, bool caller_waits) {
  Work work(op->completion);
  const bool collective = collectives::is_collective(op->kind);
  // A rejected point-to-point operation concerns nobody else when its peer is unusable or its tag
  // out of range (no receive can match it; hcomm's own transfers use kReservedTag, which a
  // user's call may not).
  const bool local_only =
      !collective && (op->peer < 0 || op->peer >= cfg_.world_size || op->peer == cfg_.rank ||
                      op->tag < 0 || (op->tag == kReservedTag && !op->invalid.ok()));
  if (!op->invalid.ok()) {
    HCOMM_LOG(warn, core::log::kColl, "%s rejected: %s", collectives::op_kind_name(op->kind),
              op->invalid.message().c_str());
    if (local_only) {
      op->completion->complete(op->invalid);
      return work;
    }
  }
  // A launching mistake found after creation (a late second claimant of a rank) ends the job.
  if (trace_ && trace_->launch_error_found()) abort(trace_->launch_error());
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    // On one host a peer's abort is on the slot board before its notice crosses the links.
    if (aborted_.ok() && slots_) aborted_ = slots_->abort_status();
    if (!aborted_.ok()) {
      op->completion->complete(aborted_);
      return work;
    }
  }
  if (collective && uses_slots(*op)) {
    const uint64_t bytes = op->agreed_bytes();
    collectives::SlotCollectives::Finished finished;
    {
      std::lock_guard<std::mutex> lock(submit_mutex_);
      // Numbered like every collective (every rank takes this path for this call).
      op->seq = next_seq_++;
      op->completion->set_driver(slots_);
      observe::OpRecord record;
      if (trace_) record = observe::make_record(*op);
      slots_->start(std::move(op), cfg_.op_timeout, &finished);
      if (trace_) trace_->record(std::move(record));
    }
    collectives::SlotCollectives::complete(finished);  // callbacks may submit: not under the lock
    // Nobody waits for it yet: a large one is moved on by the engine thread's poller from now,
    // not from the end of the epoll sleep the engine may be in — where a core is spare. Without
    // one the engine thread would run in the place of a rank that takes part, all the ranks
    // waiting for it (a 64 KiB allreduce on 2 ranks and 2 cores: 46 us instead of 6): the
    // operation is left to its caller's wait or test, or the engine's next look (within 1 ms,
    // SlotCollectives::max_sleep_ms()). A small one always is (see kWakeEngineBytes).
    if (!caller_waits && !work.test() && bytes >= kWakeEngineBytes &&
        spare_core(control_->local_ranks()))
      control_->wake_engine();
    return work;
  }
  if (op->kind == collectives::OpKind::recv && op->peer == Communicator::kAnySource) {
    post_any_source(std::move(op));
    return work;
  }
  std::lock_guard<std::mutex> lock(submit_mutex_);
  start_locked(std::move(op), caller_waits);
  return work;
}

Status CommunicatorImpl::launch_error_within(std::chrono::milliseconds wait) const {
  if (!trace_) return {};
  const auto until = std::chrono::steady_clock::now() + wait;
  while (!trace_->launch_error_found() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!trace_->launch_error_found()) return {};
  return {HCOMM_ERR_INVALID_ARG, trace_->launch_error()};
}

void CommunicatorImpl::start_locked(collectives::OperationPtr op, bool caller_waits) {
  const bool collective = collectives::is_collective(op->kind);
  const uint64_t bytes = op->agreed_bytes();
  op->completion->set_driver(driver_);
  if (collective) {
    op->seq = next_seq_++;
  } else {
    auto& counters = op->kind == collectives::OpKind::send ? sends_ : recvs_;
    const bool sending = op->kind == collectives::OpKind::send;
    const bool lower_sends = sending ? cfg_.rank < op->peer : op->peer < cfg_.rank;
    op->seq = p2p_key(op->tag, lower_sends, counters[{op->peer, op->tag}]++);
  }
  collectives::Schedule schedule;
  if (op->invalid.ok()) {
    collectives::FrameCodec::round_inputs(*op,
                                          cfg_.comp_error_feedback ? &input_residuals_ : nullptr);
    auto choice = selector_->choose(op->kind, op->agreed_bytes());
    op->algo = choice.algo;
    log_choice(*op, choice);
    schedule = collectives::plan(*op, {cfg_.rank, cfg_.world_size, choice.chunk_bytes,
                                       ring_order_.empty() ? nullptr : &ring_order_,
                                       host_of_.empty() ? nullptr : &host_of_});
  }
  // hcomm's own transfers (calibration, shrink) are not the application's operations.
  const bool recorded = trace_ && (collective || op->tag != kReservedTag);
  observe::OpRecord record;
  if (recorded) record = observe::make_record(*op);
  // A waiting caller drives the engine only while its wait spins.
  using Waker = transport::ProgressEngine::Waker;
  control_->start(std::move(op), std::move(schedule),
                  caller_waits && driver_->spins() ? Waker::caller
                  : bytes >= kWakeEngineBytes && spare_core(control_->local_ranks())
                      ? Waker::engine
                      : Waker::nearby);
  if (recorded) trace_->record(std::move(record));
}

// ---- receives from any source
//
// The executor keeps the point-to-point messages that arrived before a receive for them started
// (ScheduleExecutor::unexpected_messages). A receive from any source waits in any_source_ (in
// posting order) until one of them is the next message from its peer with its tag that no
// receive has claimed (the receive counters say which), then becomes a receive from that peer.
// Matching runs on the engine: when such a receive is posted, and when a message arrives.

void CommunicatorImpl::post_any_source(collectives::OperationPtr op) {
  op->completion->set_driver(driver_);
  {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    any_source_.push_back(std::move(op));
    any_source_waiting_.store(true, std::memory_order_release);
  }
  control_->with_plane([this](dataplane::DataPlane& plane) { match_any_source(plane); });
}

void CommunicatorImpl::match_any_source(dataplane::DataPlane& plane) {
  const auto& arrived = plane.executor().unexpected_messages();
  std::lock_guard<std::mutex> lock(submit_mutex_);
  for (auto it = any_source_.begin(); it != any_source_.end();) {
    collectives::Operation& want = **it;
    const std::pair<int, uint64_t>* best = nullptr;
    uint64_t best_arrival = UINT64_MAX;
    for (const auto& [key, arrival] : arrived) {
      const auto& [peer, seq] = key;
      if (arrival >= best_arrival || p2p_tag(seq) != want.tag) continue;
      auto claimed = recvs_.find({peer, want.tag});
      if (p2p_nth(seq) != (claimed == recvs_.end() ? 0 : claimed->second)) continue;
      best = &key;
      best_arrival = arrival;
    }
    if (best == nullptr) {
      ++it;
      continue;
    }
    want.peer = best->first;
    want.completion->set_source(best->first);
    collectives::OperationPtr op = std::move(*it);
    it = any_source_.erase(it);
    // Takes the message's number: the next ones skip it.
    start_locked(std::move(op), false);
  }
  any_source_waiting_.store(!any_source_.empty(), std::memory_order_release);
}

void CommunicatorImpl::fail_any_source(const Status& status) {
  std::deque<collectives::OperationPtr> pending;
  {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    pending.swap(any_source_);
    any_source_waiting_.store(false, std::memory_order_release);
  }
  for (auto& op : pending) op->completion->complete(status);
}

bool CommunicatorImpl::uses_slots(const collectives::Operation& op) const {
  // A forced algorithm (HCOMM_ALGO) is run as asked, even where the slot board would be faster.
  return slots_ && forced_.forced(op.kind) == collectives::Algorithm::automatic &&
         slots_->handles(op);
}

Status CommunicatorImpl::run(collectives::OperationPtr op) {
  return submit(std::move(op), true).wait(cfg_.op_timeout);
}

Work CommunicatorImpl::combine(const std::vector<Work>& works) {
  auto all = std::make_shared<core::Completion>();
  all->set_driver(driver_);
  struct Tally {
    std::mutex mutex;
    size_t left;
    Status first_failure;
  };
  auto tally = std::make_shared<Tally>();
  tally->left = works.size();
  if (works.empty()) all->complete({});
  for (size_t i = 0; i < works.size(); ++i) {
    works[i].on_complete([tally, all](const Status& s) {
      bool last;
      Status result;
      {
        std::lock_guard<std::mutex> lock(tally->mutex);
        if (!s.ok() && tally->first_failure.ok()) tally->first_failure = s;
        last = --tally->left == 0;
        result = tally->first_failure;
      }
      if (last) all->complete(result);
    });
  }
  return Work(all);
}

std::shared_ptr<core::Completion> CommunicatorImpl::copy_to_self(
    const std::vector<const PointToPointOp*>& sends,
    const std::vector<const PointToPointOp*>& recvs) {
  auto done = std::make_shared<core::Completion>();
  Status result;
  for (const auto* ops : {&sends, &recvs})
    for (const PointToPointOp* p : *ops)
      if (result.ok() && (p->tag < 0 || p->tag == INT_MAX))
        result = {HCOMM_ERR_INVALID_ARG,
                  "batch: a transfer to self has tag " + std::to_string(p->tag) +
                      ": tags must be in [0, INT_MAX) (INT_MAX is reserved)"};
  // The k-th send to self with tag t meets the k-th receive from self with tag t.
  std::vector<bool> used(recvs.size(), false);
  for (size_t k = 0; result.ok() && k < sends.size(); ++k) {
    const PointToPointOp* s = sends[k];
    size_t match = recvs.size();
    for (size_t i = 0; i < recvs.size() && match == recvs.size(); ++i)
      if (!used[i] && recvs[i]->tag == s->tag) match = i;
    const size_t bytes = s->count * dtype_size(s->dtype);
    if (match == recvs.size()) {
      result = {HCOMM_ERR_INVALID_ARG, "batch: a send to self (tag " + std::to_string(s->tag) +
                                           ") has no matching receive from self in the batch"};
      break;
    }
    used[match] = true;
    const auto* r = recvs[match];
    const size_t room = r->count * dtype_size(r->dtype);
    if (!is_valid(s->dtype) || !is_valid(r->dtype) || bytes != room ||
        (bytes > 0 && (s->buf == nullptr || r->buf == nullptr))) {
      result = {HCOMM_ERR_INVALID_ARG, "batch: a send to self of " + std::to_string(bytes) +
                                           " bytes meets a receive of " + std::to_string(room) +
                                           " bytes (tag " + std::to_string(s->tag) +
                                           "): sizes must match and buffers be valid"};
      break;
    }
    if (bytes > 0) std::memmove(r->buf, s->buf, bytes);
  }
  if (result.ok() && sends.size() != recvs.size())
    result = {HCOMM_ERR_INVALID_ARG,
              "batch: a receive from self has no matching send to self in the batch"};
  done->complete(result);
  return done;
}

void CommunicatorImpl::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    if (aborted_.ok()) aborted_ = {HCOMM_ERR_ABORTED, "the communicator was aborted: " + reason};
  }
  fail_any_source({HCOMM_ERR_ABORTED, "the communicator was aborted: " + reason});
  if (trace_) observe::Observer::get().dump("abort", reason);
  // The peers hear of it over the links and, on one host, through the slot board: the board
  // only once this rank's own operations failed with the abort (a peer that reads it may
  // destroy its communicator at once, and its goodbye would otherwise fail them first).
  std::function<void()> tell_board;
  if (slots_) tell_board = [slots = slots_, reason] { slots->abort(reason); };
  control_->abort(reason, std::move(tell_board));
}

}  // namespace hcomm::api
