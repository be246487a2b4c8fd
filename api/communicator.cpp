// The public Communicator and its implementation: argument checking, numbering, algorithm
// choice, planning and the blocking forms. Moving bytes is the data plane's business
// (transport/, collectives/), connections the control plane's (actors/).
#include "hcomm/communicator.hpp"

#include <climits>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "api/communicator_impl.hpp"
#include "bootstrap/launch_env.hpp"
#include "collectives/algorithm_choice.hpp"
#include "collectives/algorithms.hpp"
#include "core/log.hpp"
#include "topology/ring_order.hpp"

namespace hcomm {
namespace api {

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

/// Point-to-point operations are keyed by (tag, n-th message of that tag between the pair): the
/// sender and the receiver count alike. The top bit keeps them apart from collective numbers.
uint64_t p2p_key(int tag, uint32_t nth) {
  return (uint64_t{1} << 63) |
         (static_cast<uint64_t>(static_cast<uint32_t>(tag) & 0x7fffffffu) << 32) | nth;
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
      control_(std::move(control)),
      forced_(forced),
      driver_(
          std::make_shared<EngineDriver>(*control_, spin_budget(cfg_, control_->local_ranks()))),
      ring_order_(std::move(ring_order)) {
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
}

void CommunicatorImpl::make_selector(const collectives::LinkCost& cost,
                                     std::optional<collectives::LinkCost> local_cost) {
  std::map<int, int> ranks_per_host;
  for (int h : host_of_) ++ranks_per_host[h];
  int largest = 0;
  for (const auto& [host, ranks] : ranks_per_host) largest = std::max(largest, ranks);
  selector_ = std::make_unique<collectives::AlgorithmSelector>(
      cfg_.world_size, cost, forced_, cfg_.chunk_bytes,
      std::max<int>(1, static_cast<int>(ranks_per_host.size())), largest, local_cost);
}

CommunicatorImpl::~CommunicatorImpl() {
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
  // A rejected point-to-point operation whose peer is unusable concerns nobody else.
  const bool local_only =
      !collective && (op->peer < 0 || op->peer >= cfg_.world_size || op->peer == cfg_.rank);
  if (!op->invalid.ok()) {
    HCOMM_LOG(warn, core::log::kColl, "%s rejected: %s", collectives::op_kind_name(op->kind),
              op->invalid.message().c_str());
    if (local_only) {
      op->completion->complete(op->invalid);
      return work;
    }
  }
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    if (!aborted_.ok()) {
      op->completion->complete(aborted_);
      return work;
    }
  }
  if (collective && uses_slots(*op)) {
    collectives::SlotCollectives::Finished finished;
    {
      std::lock_guard<std::mutex> lock(submit_mutex_);
      // Numbered like every collective (every rank takes this path for this call).
      op->seq = next_seq_++;
      op->completion->set_driver(slots_);
      slots_->start(std::move(op), cfg_.op_timeout, &finished);
    }
    collectives::SlotCollectives::complete(finished);  // callbacks may submit: not under the lock
    return work;
  }
  std::lock_guard<std::mutex> lock(submit_mutex_);
  op->completion->set_driver(driver_);
  if (collective) {
    op->seq = next_seq_++;
  } else {
    auto& counters = op->kind == collectives::OpKind::send ? sends_ : recvs_;
    op->seq = p2p_key(op->tag, counters[{op->peer, op->tag}]++);
  }
  collectives::Schedule schedule;
  if (op->invalid.ok()) {
    auto choice = selector_->choose(op->kind, op->agreed_bytes());
    op->algo = choice.algo;
    log_choice(*op, choice);
    schedule = collectives::plan(*op, {cfg_.rank, cfg_.world_size, choice.chunk_bytes,
                                       ring_order_.empty() ? nullptr : &ring_order_,
                                       host_of_.empty() ? nullptr : &host_of_});
  }
  control_->start(std::move(op), std::move(schedule), caller_waits);
  return work;
}

bool CommunicatorImpl::uses_slots(const collectives::Operation& op) const {
  // A forced algorithm (HCOMM_ALGO) is run as asked, even where the slot board would be faster.
  return slots_ && forced_.forced(op.kind) == collectives::Algorithm::automatic &&
         slots_->handles(op);
}

bool CommunicatorImpl::caller_spins() const {
  return driver_->spins();
}

Status CommunicatorImpl::run(collectives::OperationPtr op) {
  return submit(std::move(op), driver_->spins()).wait(cfg_.op_timeout);
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

Status CommunicatorImpl::check_type(const char* what, DataType dtype) const {
  if (is_valid(dtype)) return {};
  return {HCOMM_ERR_INVALID_ARG, std::string(what) + ": invalid data type " +
                                     std::to_string(static_cast<int>(dtype)) +
                                     " (use a hcomm::DataType value)"};
}

Status CommunicatorImpl::check_op(const char* what, ReduceOp op) const {
  if (is_valid(op)) return {};
  return {HCOMM_ERR_INVALID_ARG, std::string(what) + ": invalid reduce op " +
                                     std::to_string(static_cast<int>(op)) +
                                     " (use a hcomm::ReduceOp value)"};
}

Status CommunicatorImpl::check_buffer(const char* what, const char* role, const void* p,
                                      size_t count, DataType dtype) const {
  if (count > (size_t{1} << 60) / std::max<size_t>(1, dtype_size(dtype)))
    return {HCOMM_ERR_INVALID_ARG,
            std::string(what) + ": count " + std::to_string(count) + " is too large"};
  if (count > 0 && p == nullptr)
    return {HCOMM_ERR_INVALID_ARG, std::string(what) + ": null " + role + " buffer with " +
                                       std::to_string(count) +
                                       " elements (pass a valid buffer, or count 0)"};
  return {};
}

Status CommunicatorImpl::check_rank(const char* what, const char* role, int r) const {
  if (r < 0 || r >= cfg_.world_size)
    return {HCOMM_ERR_INVALID_ARG, std::string(what) + ": " + role + " " + std::to_string(r) +
                                       " is out of range [0, " + std::to_string(cfg_.world_size) +
                                       ")"};
  return {};
}

Status CommunicatorImpl::check_counts(const char* what, const char* role,
                                      const std::vector<size_t>& counts,
                                      const std::vector<size_t>& displs) const {
  const size_t n = static_cast<size_t>(cfg_.world_size);
  if (counts.size() != n || displs.size() != n)
    return {HCOMM_ERR_INVALID_ARG,
            std::string(what) + ": " + role + " counts and displacements need " +
                std::to_string(n) + " entries each (one per rank), got " +
                std::to_string(counts.size()) + " and " + std::to_string(displs.size())};
  for (size_t i = 0; i < n; ++i)
    if (counts[i] > (size_t{1} << 56) || displs[i] > (size_t{1} << 56))
      return {HCOMM_ERR_INVALID_ARG,
              std::string(what) + ": " + role + " entry " + std::to_string(i) + " is too large"};
  return {};
}

std::shared_ptr<core::Completion> CommunicatorImpl::copy_to_self(
    const std::vector<const PointToPointOp*>& sends,
    const std::vector<const PointToPointOp*>& recvs) {
  auto done = std::make_shared<core::Completion>();
  // The k-th send to self with tag t meets the k-th receive from self with tag t.
  std::vector<bool> used(recvs.size(), false);
  Status result;
  for (const auto* s : sends) {
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

}  // namespace api

namespace {

using api::CommunicatorImpl;

collectives::OperationPtr make_op(collectives::OpKind kind, const void* send, void* recv,
                                  size_t count, DataType dtype) {
  auto op = std::make_shared<collectives::Operation>();
  op->kind = kind;
  op->send = static_cast<const std::byte*>(send);
  op->recv = static_cast<std::byte*>(recv);
  op->count = count;
  op->dtype = dtype;
  return op;
}

/// The first failed check, or success.
Status first_failure(std::initializer_list<Status> checks) {
  for (const Status& s : checks)
    if (!s.ok()) return s;
  return {};
}

/// A rejected operation still travels (so peers learn of the failure), with fields every rank
/// can put in a frame header.
void sanitize_rejected(collectives::Operation& op) {
  if (op.invalid.ok()) return;
  if (!is_valid(op.dtype)) op.dtype = DataType::uint8;
  if (!is_valid(op.redop)) op.redop = ReduceOp::sum;
  op.root = 0;
  op.send_counts.clear();
  op.send_displs.clear();
  op.recv_counts.clear();
  op.recv_displs.clear();
}

/// The topology-aware ring order, from every rank's host (from the rendezvous) and the
/// topology file all ranks are given: the same on every rank.
std::vector<int> ring_order_of(const actors::CommunicatorControl& control,
                               const topology::TopologyFile* file) {
  std::vector<std::string> ids, names;
  for (const auto& p : control.places()) {
    ids.push_back(p.host_id);
    names.push_back(p.host_name);
  }
  return topology::ring_order(ids, names, file);
}

Status check_config(const Config& cfg) {
  if (cfg.world_size < 1)
    return {HCOMM_ERR_INVALID_ARG, "world size not set: set " + bootstrap::world_size_variables() +
                                       ", or launch with hcomm-run -n N"};
  if (cfg.rank < 0 || cfg.rank >= cfg.world_size)
    return {HCOMM_ERR_INVALID_ARG, "rank " + std::to_string(cfg.rank) + " is not in [0, " +
                                       std::to_string(cfg.world_size) + "): set " +
                                       bootstrap::rank_variables()};
  if (cfg.sockets_per_peer < 1 || cfg.sockets_per_peer > 16)
    return {HCOMM_ERR_INVALID_ARG, "sockets_per_peer must be in [1, 16]"};
  if (cfg.chunk_bytes != 0 && cfg.chunk_bytes < 8)
    return {HCOMM_ERR_INVALID_ARG, "chunk_bytes must be 0 (automatic) or at least 8"};
  if (cfg.actor_threads < 1) return {HCOMM_ERR_INVALID_ARG, "actor_threads must be at least 1"};
  return {};
}

}  // namespace

Expected<std::unique_ptr<Communicator>> Communicator::create(const Config& cfg) {
  Status st = check_config(cfg);
  if (!st.ok()) return st;
  auto forced = collectives::AlgorithmChoice::parse(cfg.algo);
  if (!forced.ok()) return forced.status();
  std::optional<topology::TopologyFile> topo_file;  // checked before anyone waits for this rank
  if (!cfg.topo_file.empty()) {
    auto file = topology::TopologyFile::load(cfg.topo_file);
    if (!file.ok()) return file.status();
    topo_file = std::move(file.value());
  }
  core::log::set_rank(cfg.rank);
  auto control = actors::CommunicatorControl::establish(cfg);
  if (!control.ok()) {
    HCOMM_LOG(error, core::log::kInit, "%s", control.status().to_string().c_str());
    return control.status();
  }
  auto order = ring_order_of(*control.value(), topo_file ? &*topo_file : nullptr);
  auto impl = std::make_unique<CommunicatorImpl>(cfg, std::move(control.value()), forced.value(),
                                                 std::move(order));
  st = impl->calibrate();
  if (!st.ok()) return st;
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

Expected<std::unique_ptr<Communicator>> Communicator::create_from_env() {
  auto cfg = Config::from_env();
  if (!cfg.ok()) return cfg.status();
  return create(cfg.value());
}

Communicator::Communicator(std::unique_ptr<CommunicatorImpl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

int Communicator::rank() const {
  return impl_->rank();
}
int Communicator::size() const {
  return impl_->size();
}
const Config& Communicator::config() const {
  return impl_->config();
}

std::string Communicator::algorithm_for(const std::string& op_name, size_t bytes) const {
  collectives::OpKind kind;
  if (!collectives::parse_op_kind(op_name, kind)) return "";
  collectives::Operation probe;
  probe.kind = kind;
  probe.count = bytes;  // of uint8: bytes per rank, as handles() counts them
  if (impl_->uses_slots(probe))
    return impl_->uses_staging(probe) ? collectives::kStagedName : collectives::kSlotBoardName;
  return collectives::algorithm_name(impl_->selector().choose(kind, bytes).algo);
}

std::vector<RankInfo> Communicator::ranks() const {
  std::vector<RankInfo> out;
  const auto& places = impl_->control().places();
  for (int r = 0; r < static_cast<int>(places.size()); ++r) {
    const auto& p = places[static_cast<size_t>(r)];
    RankInfo info;
    info.rank = r;
    info.host = p.host_name;
    info.host_id = p.host_id;
    info.address = p.endpoint;
    info.transport = impl_->control().carrier_to(r);
    info.primary_transport = impl_->control().transport_to(r);
    info.bytes_sent = r == rank() ? 0 : impl_->control().bytes_sent(r);
    out.push_back(std::move(info));
  }
  const auto& order = impl_->ring_order();
  for (size_t p = 0; p < out.size(); ++p)
    out[order.empty() ? p : static_cast<size_t>(order[p])].ring_position = static_cast<int>(p);
  return out;
}

void CommunicatorImpl::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    if (aborted_.ok()) aborted_ = {HCOMM_ERR_ABORTED, "the communicator was aborted: " + reason};
  }
  control_->abort(reason);
}

FailoverStats Communicator::failover_stats() const {
  return impl_->control().failover_stats();
}

std::vector<int> Communicator::lost_peers() const {
  return impl_->control().lost_peers();
}

Status Communicator::set_qos(const QosClass& qos) {
  return impl_->control_mutable().set_qos(qos);
}

QosClass Communicator::qos() const {
  return impl_->control().qos();
}

void Communicator::abort(const std::string& reason) {
  impl_->abort(reason);
}

// ---- the operations: build, check, submit

namespace {

collectives::OperationPtr allreduce_op(CommunicatorImpl& c, const void* send, void* recv,
                                       size_t count, DataType dtype, ReduceOp op) {
  auto o = make_op(collectives::OpKind::allreduce, send, recv, count, dtype);
  o->redop = op;
  o->invalid = first_failure({c.check_type("allreduce", dtype), c.check_op("allreduce", op),
                              c.check_buffer("allreduce", "send", send, count, dtype),
                              c.check_buffer("allreduce", "recv", recv, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr broadcast_op(CommunicatorImpl& c, void* buf, size_t count, DataType dtype,
                                       int root) {
  auto o = make_op(collectives::OpKind::broadcast, buf, buf, count, dtype);
  o->root = root;
  o->invalid =
      first_failure({c.check_rank("broadcast", "root", root), c.check_type("broadcast", dtype),
                     c.check_buffer("broadcast", "", buf, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr reduce_op(CommunicatorImpl& c, const void* send, void* recv, size_t count,
                                    DataType dtype, ReduceOp op, int root) {
  auto o = make_op(collectives::OpKind::reduce, send, recv, count, dtype);
  o->redop = op;
  o->root = root;
  o->invalid = first_failure(
      {c.check_rank("reduce", "root", root), c.check_type("reduce", dtype),
       c.check_op("reduce", op), c.check_buffer("reduce", "send", send, count, dtype),
       root == c.rank() ? c.check_buffer("reduce", "recv (on the root)", recv, count, dtype)
                        : Status{}});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr allgather_op(CommunicatorImpl& c, const void* send, void* recv,
                                       size_t count, DataType dtype) {
  auto o = make_op(collectives::OpKind::allgather, send, recv, count, dtype);
  o->invalid = first_failure({c.check_type("allgather", dtype),
                              c.check_buffer("allgather", "send", send, count, dtype),
                              c.check_buffer("allgather", "recv", recv, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr allgatherv_op(CommunicatorImpl& c, const void* send, void* recv,
                                        const std::vector<size_t>& counts,
                                        const std::vector<size_t>& displs, DataType dtype) {
  auto o = make_op(collectives::OpKind::allgatherv, send, recv, 0, dtype);
  o->recv_counts = counts;
  o->recv_displs = displs;
  o->invalid = first_failure(
      {c.check_type("allgatherv", dtype), c.check_counts("allgatherv", "recv", counts, displs)});
  if (o->invalid.ok()) {
    size_t total = 0;
    for (size_t n : counts) total += n;
    o->invalid = first_failure(
        {c.check_buffer("allgatherv", "send", send, counts[static_cast<size_t>(c.rank())], dtype),
         c.check_buffer("allgatherv", "recv", recv, total, dtype)});
  }
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr reduce_scatter_op(CommunicatorImpl& c, const void* send, void* recv,
                                            size_t count, DataType dtype, ReduceOp op) {
  auto o = make_op(collectives::OpKind::reduce_scatter, send, recv, count, dtype);
  o->redop = op;
  o->invalid =
      first_failure({c.check_type("reduce_scatter", dtype), c.check_op("reduce_scatter", op),
                     c.check_buffer("reduce_scatter", "send", send, count, dtype),
                     c.check_buffer("reduce_scatter", "recv", recv, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr alltoall_op(CommunicatorImpl& c, const void* send, void* recv,
                                      size_t count, DataType dtype) {
  auto o = make_op(collectives::OpKind::alltoall, send, recv, count, dtype);
  o->invalid = first_failure({c.check_type("alltoall", dtype),
                              c.check_buffer("alltoall", "send", send, count, dtype),
                              c.check_buffer("alltoall", "recv", recv, count, dtype)});
  if (o->invalid.ok()) {  // the builder works on the general (v) form
    const size_t n = static_cast<size_t>(c.size());
    o->send_counts.assign(n, count);
    o->recv_counts.assign(n, count);
    for (size_t i = 0; i < n; ++i) {
      o->send_displs.push_back(i * count);
      o->recv_displs.push_back(i * count);
    }
  }
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr alltoallv_op(CommunicatorImpl& c, const void* send,
                                       const std::vector<size_t>& send_counts,
                                       const std::vector<size_t>& send_displs, void* recv,
                                       const std::vector<size_t>& recv_counts,
                                       const std::vector<size_t>& recv_displs, DataType dtype) {
  auto o = make_op(collectives::OpKind::alltoallv, send, recv, 0, dtype);
  o->send_counts = send_counts;
  o->send_displs = send_displs;
  o->recv_counts = recv_counts;
  o->recv_displs = recv_displs;
  o->invalid = first_failure({c.check_type("alltoallv", dtype),
                              c.check_counts("alltoallv", "send", send_counts, send_displs),
                              c.check_counts("alltoallv", "recv", recv_counts, recv_displs)});
  if (o->invalid.ok()) {
    size_t sent = 0, received = 0;
    for (size_t n : send_counts) sent += n;
    for (size_t n : recv_counts) received += n;
    o->invalid = first_failure({c.check_buffer("alltoallv", "send", send, sent, dtype),
                                c.check_buffer("alltoallv", "recv", recv, received, dtype)});
  }
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr gather_op(CommunicatorImpl& c, const void* send, void* recv, size_t count,
                                    DataType dtype, int root) {
  auto o = make_op(collectives::OpKind::gather, send, recv, count, dtype);
  o->root = root;
  o->invalid = first_failure(
      {c.check_rank("gather", "root", root), c.check_type("gather", dtype),
       c.check_buffer("gather", "send", send, count, dtype),
       root == c.rank() ? c.check_buffer("gather", "recv (on the root)", recv, count, dtype)
                        : Status{}});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr scatter_op(CommunicatorImpl& c, const void* send, void* recv,
                                     size_t count, DataType dtype, int root) {
  auto o = make_op(collectives::OpKind::scatter, send, recv, count, dtype);
  o->root = root;
  o->invalid = first_failure(
      {c.check_rank("scatter", "root", root), c.check_type("scatter", dtype),
       root == c.rank() ? c.check_buffer("scatter", "send (on the root)", send, count, dtype)
                        : Status{},
       c.check_buffer("scatter", "recv", recv, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

collectives::OperationPtr p2p_op(CommunicatorImpl& c, collectives::OpKind kind, void* buf,
                                 size_t count, DataType dtype, int peer, int tag) {
  const bool is_send = kind == collectives::OpKind::send;
  const char* what = is_send ? "send" : "recv";
  auto o = make_op(kind, is_send ? buf : nullptr, is_send ? nullptr : buf, count, dtype);
  o->peer = peer;
  o->tag = tag;
  o->invalid = c.check_rank(what, "peer", peer);
  if (o->invalid.ok() && peer == c.rank())
    o->invalid = {HCOMM_ERR_INVALID_ARG, std::string(what) + ": peer " + std::to_string(peer) +
                                             " is this rank; copy the buffer instead"};
  if (o->invalid.ok() && (tag < 0 || tag == INT_MAX))
    o->invalid = {HCOMM_ERR_INVALID_ARG,
                  std::string(what) + ": tag must be in [0, INT_MAX) (INT_MAX is reserved)"};
  if (o->invalid.ok())
    o->invalid =
        first_failure({c.check_type(what, dtype), c.check_buffer(what, "", buf, count, dtype)});
  sanitize_rejected(*o);
  return o;
}

}  // namespace

Work Communicator::allreduce_async(const void* send, void* recv, size_t count, DataType dtype,
                                   ReduceOp op) {
  return impl_->submit(allreduce_op(*impl_, send, recv, count, dtype, op));
}
Work Communicator::broadcast_async(void* buf, size_t count, DataType dtype, int root) {
  return impl_->submit(broadcast_op(*impl_, buf, count, dtype, root));
}
Work Communicator::reduce_async(const void* send, void* recv, size_t count, DataType dtype,
                                ReduceOp op, int root) {
  return impl_->submit(reduce_op(*impl_, send, recv, count, dtype, op, root));
}
Work Communicator::allgather_async(const void* send, void* recv, size_t count, DataType dtype) {
  return impl_->submit(allgather_op(*impl_, send, recv, count, dtype));
}
Work Communicator::allgatherv_async(const void* send, void* recv,
                                    const std::vector<size_t>& recv_counts,
                                    const std::vector<size_t>& recv_displs, DataType dtype) {
  return impl_->submit(allgatherv_op(*impl_, send, recv, recv_counts, recv_displs, dtype));
}
Work Communicator::reduce_scatter_async(const void* send, void* recv, size_t recv_count,
                                        DataType dtype, ReduceOp op) {
  return impl_->submit(reduce_scatter_op(*impl_, send, recv, recv_count, dtype, op));
}
Work Communicator::alltoall_async(const void* send, void* recv, size_t count, DataType dtype) {
  return impl_->submit(alltoall_op(*impl_, send, recv, count, dtype));
}
Work Communicator::alltoallv_async(const void* send, const std::vector<size_t>& send_counts,
                                   const std::vector<size_t>& send_displs, void* recv,
                                   const std::vector<size_t>& recv_counts,
                                   const std::vector<size_t>& recv_displs, DataType dtype) {
  return impl_->submit(
      alltoallv_op(*impl_, send, send_counts, send_displs, recv, recv_counts, recv_displs, dtype));
}
Work Communicator::gather_async(const void* send, void* recv, size_t count, DataType dtype,
                                int root) {
  return impl_->submit(gather_op(*impl_, send, recv, count, dtype, root));
}
Work Communicator::scatter_async(const void* send, void* recv, size_t count, DataType dtype,
                                 int root) {
  return impl_->submit(scatter_op(*impl_, send, recv, count, dtype, root));
}
Work Communicator::barrier_async() {
  return impl_->submit(make_op(collectives::OpKind::barrier, nullptr, nullptr, 0, DataType::uint8));
}
Work Communicator::send_async(const void* buf, size_t count, DataType dtype, int peer, int tag) {
  return impl_->submit(
      p2p_op(*impl_, collectives::OpKind::send, const_cast<void*>(buf), count, dtype, peer, tag));
}
Work Communicator::recv_async(void* buf, size_t count, DataType dtype, int peer, int tag) {
  return impl_->submit(p2p_op(*impl_, collectives::OpKind::recv, buf, count, dtype, peer, tag));
}
Work Communicator::batch_async(const std::vector<PointToPointOp>& ops) {
  std::vector<Work> works;
  std::vector<const PointToPointOp*> self_sends, self_recvs;
  for (const auto& p : ops) {
    const bool is_send = p.kind == PointToPointOp::Kind::send;
    if (p.peer == rank()) {  // NCCL's groups allow it: matched below, copied locally
      (is_send ? self_sends : self_recvs).push_back(&p);
      continue;
    }
    auto kind = is_send ? collectives::OpKind::send : collectives::OpKind::recv;
    works.push_back(impl_->submit(p2p_op(*impl_, kind, p.buf, p.count, p.dtype, p.peer, p.tag)));
  }
  works.push_back(Work(impl_->copy_to_self(self_sends, self_recvs)));
  return impl_->combine(works);
}

Status Communicator::allreduce(const void* send, void* recv, size_t count, DataType dtype,
                               ReduceOp op) {
  return impl_->run(allreduce_op(*impl_, send, recv, count, dtype, op));
}
Status Communicator::broadcast(void* buf, size_t count, DataType dtype, int root) {
  return impl_->run(broadcast_op(*impl_, buf, count, dtype, root));
}
Status Communicator::reduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                            int root) {
  return impl_->run(reduce_op(*impl_, send, recv, count, dtype, op, root));
}
Status Communicator::allgather(const void* send, void* recv, size_t count, DataType dtype) {
  return impl_->run(allgather_op(*impl_, send, recv, count, dtype));
}
Status Communicator::allgatherv(const void* send, void* recv,
                                const std::vector<size_t>& recv_counts,
                                const std::vector<size_t>& recv_displs, DataType dtype) {
  return impl_->run(allgatherv_op(*impl_, send, recv, recv_counts, recv_displs, dtype));
}
Status Communicator::reduce_scatter(const void* send, void* recv, size_t recv_count, DataType dtype,
                                    ReduceOp op) {
  return impl_->run(reduce_scatter_op(*impl_, send, recv, recv_count, dtype, op));
}
Status Communicator::alltoall(const void* send, void* recv, size_t count, DataType dtype) {
  return impl_->run(alltoall_op(*impl_, send, recv, count, dtype));
}
Status Communicator::alltoallv(const void* send, const std::vector<size_t>& send_counts,
                               const std::vector<size_t>& send_displs, void* recv,
                               const std::vector<size_t>& recv_counts,
                               const std::vector<size_t>& recv_displs, DataType dtype) {
  return impl_->run(
      alltoallv_op(*impl_, send, send_counts, send_displs, recv, recv_counts, recv_displs, dtype));
}
Status Communicator::gather(const void* send, void* recv, size_t count, DataType dtype, int root) {
  return impl_->run(gather_op(*impl_, send, recv, count, dtype, root));
}
Status Communicator::scatter(const void* send, void* recv, size_t count, DataType dtype, int root) {
  return impl_->run(scatter_op(*impl_, send, recv, count, dtype, root));
}
Status Communicator::barrier() {
  return impl_->run(make_op(collectives::OpKind::barrier, nullptr, nullptr, 0, DataType::uint8));
}
Status Communicator::send(const void* buf, size_t count, DataType dtype, int peer, int tag) {
  return impl_->run(
      p2p_op(*impl_, collectives::OpKind::send, const_cast<void*>(buf), count, dtype, peer, tag));
}
Status Communicator::recv(void* buf, size_t count, DataType dtype, int peer, int tag) {
  return impl_->run(p2p_op(*impl_, collectives::OpKind::recv, buf, count, dtype, peer, tag));
}
Status Communicator::batch(const std::vector<PointToPointOp>& ops) {
  return batch_async(ops).wait(config().op_timeout);
}

}  // namespace hcomm
