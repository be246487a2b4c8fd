// The public Communicator: each call builds its operation (OperationBuilder, which checks the
// arguments) and hands it to the implementation (CommunicatorImpl), which numbers, plans and
// starts it; the blocking forms wait up to Config::op_timeout.
#include "hcomm/communicator.hpp"

#include <optional>

#include "api/argument_checks.hpp"
#include "api/communicator_impl.hpp"
#include "bootstrap/launch_env.hpp"
#include "collectives/algorithm_choice.hpp"
#include "collectives/algorithms.hpp"
#include "core/log.hpp"
#include "observe/observer.hpp"
#include "topology/ring_order.hpp"
#include "topology/topology_file.hpp"

namespace hcomm {
namespace {

using api::CommunicatorImpl;

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

}  // namespace

Expected<std::unique_ptr<Communicator>> Communicator::create(const Config& cfg) {
  Status st = api::check_config(cfg);
  if (!st.ok()) return st;
  if (auto observing = observe::Observer::settings(); !observing.ok()) return observing.status();
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
  if (!st.ok()) {
    // A peer that gave up on a launching mistake (a duplicate rank posted late) fails the
    // calibration: the mistake, which the observer finds in the store, is what to report.
    Status mistake = impl->launch_error_within(std::chrono::milliseconds(500));
    return mistake.ok() ? st : mistake;
  }
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

void Communicator::on_link_event(LinkEventCallback callback) {
  impl_->control().on_link_event(std::move(callback));
}

FailoverStats Communicator::failover_stats() const {
  return impl_->control().failover_stats();
}

std::vector<int> Communicator::lost_peers() const {
  return impl_->control().lost_peers();
}

namespace {
thread_local const Communicator::CompressionScope* innermost_scope = nullptr;

/// Submits `op` with the compression mode in force for this thread.
Work submit_in_force(const Communicator& comm, api::CommunicatorImpl& impl,
                     collectives::OperationPtr op) {
  op->compression = comm.compression_in_force();
  return impl.submit(std::move(op));
}

/// The blocking form of submit_in_force().
Status run_in_force(const Communicator& comm, api::CommunicatorImpl& impl,
                    collectives::OperationPtr op) {
  op->compression = comm.compression_in_force();
  return impl.run(std::move(op));
}
}  // namespace

Communicator::CompressionScope::CompressionScope(Communicator& comm, Compression mode)
    : comm_(&comm), mode_(mode), outer_(innermost_scope) {
  innermost_scope = this;
}

Communicator::CompressionScope::~CompressionScope() {
  innermost_scope = outer_;
}

void Communicator::set_compression(Compression mode) {
  impl_->set_compression(mode);
}

Compression Communicator::compression() const {
  return impl_->compression();
}

Compression Communicator::compression_in_force() const {
  for (const CompressionScope* s = innermost_scope; s != nullptr; s = s->outer_)
    if (s->comm_ == this) return s->mode_;
  return impl_->compression();
}

CompressionStats Communicator::compression_stats() const {
  return impl_->control().compression().stats();
}

std::string Communicator::compression_for(size_t bytes, DataType dtype, int peer) const {
  return impl_->control().compression().explain(compression_in_force(), dtype, peer, bytes);
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

Work Communicator::allreduce_async(const void* send, void* recv, size_t count, DataType dtype,
                                   ReduceOp op) {
  return submit_in_force(*this, *impl_, impl_->build().allreduce(send, recv, count, dtype, op));
}
Work Communicator::broadcast_async(void* buf, size_t count, DataType dtype, int root) {
  return submit_in_force(*this, *impl_, impl_->build().broadcast(buf, count, dtype, root));
}
Work Communicator::reduce_async(const void* send, void* recv, size_t count, DataType dtype,
                                ReduceOp op, int root) {
  return submit_in_force(*this, *impl_, impl_->build().reduce(send, recv, count, dtype, op, root));
}
Work Communicator::allgather_async(const void* send, void* recv, size_t count, DataType dtype) {
  return submit_in_force(*this, *impl_, impl_->build().allgather(send, recv, count, dtype));
}
Work Communicator::allgatherv_async(const void* send, void* recv,
                                    const std::vector<size_t>& recv_counts,
                                    const std::vector<size_t>& recv_displs, DataType dtype) {
  return submit_in_force(*this, *impl_,
                         impl_->build().allgatherv(send, recv, recv_counts, recv_displs, dtype));
}
Work Communicator::reduce_scatter_async(const void* send, void* recv, size_t recv_count,
                                        DataType dtype, ReduceOp op) {
  return submit_in_force(*this, *impl_,
                         impl_->build().reduce_scatter(send, recv, recv_count, dtype, op));
}
Work Communicator::alltoall_async(const void* send, void* recv, size_t count, DataType dtype) {
  return submit_in_force(*this, *impl_, impl_->build().alltoall(send, recv, count, dtype));
}
Work Communicator::alltoallv_async(const void* send, const std::vector<size_t>& send_counts,
                                   const std::vector<size_t>& send_displs, void* recv,
                                   const std::vector<size_t>& recv_counts,
                                   const std::vector<size_t>& recv_displs, DataType dtype) {
  return submit_in_force(*this, *impl_,
                         impl_->build().alltoallv(send, send_counts, send_displs, recv, recv_counts,
                                                  recv_displs, dtype));
}
Work Communicator::gather_async(const void* send, void* recv, size_t count, DataType dtype,
                                int root) {
  return submit_in_force(*this, *impl_, impl_->build().gather(send, recv, count, dtype, root));
}
Work Communicator::scatter_async(const void* send, void* recv, size_t count, DataType dtype,
                                 int root) {
  return submit_in_force(*this, *impl_, impl_->build().scatter(send, recv, count, dtype, root));
}
Work Communicator::barrier_async() {
  return submit_in_force(*this, *impl_, impl_->build().barrier());
}
Work Communicator::send_async(const void* buf, size_t count, DataType dtype, int peer, int tag) {
  return submit_in_force(
      *this, *impl_,
      impl_->build().point_to_point(collectives::OpKind::send, const_cast<void*>(buf), count, dtype,
                                    peer, tag));
}
Work Communicator::recv_async(void* buf, size_t count, DataType dtype, int peer, int tag) {
  return submit_in_force(
      *this, *impl_,
      impl_->build().point_to_point(collectives::OpKind::recv, buf, count, dtype, peer, tag));
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
    works.push_back(submit_in_force(
        *this, *impl_,
        impl_->build().point_to_point(kind, p.buf, p.count, p.dtype, p.peer, p.tag)));
  }
  works.push_back(Work(impl_->copy_to_self(self_sends, self_recvs)));
  return impl_->combine(works);
}

Status Communicator::allreduce(const void* send, void* recv, size_t count, DataType dtype,
                               ReduceOp op) {
  return run_in_force(*this, *impl_, impl_->build().allreduce(send, recv, count, dtype, op));
}
Status Communicator::broadcast(void* buf, size_t count, DataType dtype, int root) {
  return run_in_force(*this, *impl_, impl_->build().broadcast(buf, count, dtype, root));
}
Status Communicator::reduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                            int root) {
  return run_in_force(*this, *impl_, impl_->build().reduce(send, recv, count, dtype, op, root));
}
Status Communicator::allgather(const void* send, void* recv, size_t count, DataType dtype) {
  return run_in_force(*this, *impl_, impl_->build().allgather(send, recv, count, dtype));
}
Status Communicator::allgatherv(const void* send, void* recv,
                                const std::vector<size_t>& recv_counts,
                                const std::vector<size_t>& recv_displs, DataType dtype) {
  return run_in_force(*this, *impl_,
                      impl_->build().allgatherv(send, recv, recv_counts, recv_displs, dtype));
}
Status Communicator::reduce_scatter(const void* send, void* recv, size_t recv_count, DataType dtype,
                                    ReduceOp op) {
  return run_in_force(*this, *impl_,
                      impl_->build().reduce_scatter(send, recv, recv_count, dtype, op));
}
Status Communicator::alltoall(const void* send, void* recv, size_t count, DataType dtype) {
  return run_in_force(*this, *impl_, impl_->build().alltoall(send, recv, count, dtype));
}
Status Communicator::alltoallv(const void* send, const std::vector<size_t>& send_counts,
                               const std::vector<size_t>& send_displs, void* recv,
                               const std::vector<size_t>& recv_counts,
                               const std::vector<size_t>& recv_displs, DataType dtype) {
  return run_in_force(*this, *impl_,
                      impl_->build().alltoallv(send, send_counts, send_displs, recv, recv_counts,
                                               recv_displs, dtype));
}
Status Communicator::gather(const void* send, void* recv, size_t count, DataType dtype, int root) {
  return run_in_force(*this, *impl_, impl_->build().gather(send, recv, count, dtype, root));
}
Status Communicator::scatter(const void* send, void* recv, size_t count, DataType dtype, int root) {
  return run_in_force(*this, *impl_, impl_->build().scatter(send, recv, count, dtype, root));
}
Status Communicator::barrier() {
  return run_in_force(*this, *impl_, impl_->build().barrier());
}
Status Communicator::send(const void* buf, size_t count, DataType dtype, int peer, int tag) {
  return run_in_force(
      *this, *impl_,
      impl_->build().point_to_point(collectives::OpKind::send, const_cast<void*>(buf), count, dtype,
                                    peer, tag));
}
Status Communicator::recv(void* buf, size_t count, DataType dtype, int peer, int tag) {
  return run_in_force(
      *this, *impl_,
      impl_->build().point_to_point(collectives::OpKind::recv, buf, count, dtype, peer, tag));
}
Status Communicator::batch(const std::vector<PointToPointOp>& ops) {
  return batch_async(ops).wait(config().op_timeout);
}

}  // namespace hcomm
