// The public Communicator: argument checking and the blocking forms. Everything else is the
// control plane's (actors/) and the data plane's (transport/, collectives/) business.
#include "hcomm/communicator.hpp"

#include "actors/communicator_control.hpp"
#include "collectives/operation.hpp"
#include "log/log.hpp"

namespace hcomm {
namespace detail {

class CommunicatorImpl {
 public:
  CommunicatorImpl(Config cfg, std::unique_ptr<actors::CommunicatorControl> control)
      : cfg_(std::move(cfg)), control_(std::move(control)) {}

  const Config& config() const { return cfg_; }

  Work submit(coll::OperationPtr op) {
    Work work(op->completion);
    const bool collective = coll::is_collective(op->kind);
    // A rejected point-to-point operation whose peer is unusable concerns nobody else.
    const bool local_only =
        !collective && (op->peer < 0 || op->peer >= cfg_.world_size || op->peer == cfg_.rank);
    if (!op->invalid.ok()) {
      HCOMM_LOG(warn, log::kColl, "%s rejected: %s", coll::op_kind_name(op->kind),
                op->invalid.message().c_str());
      if (local_only) {
        op->completion->complete(op->invalid);
        return work;
      }
    }
    control_->submit(std::move(op));
    return work;
  }

  /// Checks what every operation shares; an empty Status when all is well.
  Status check(const char* what, const void* send, const void* recv, size_t count,
               DataType dtype) const {
    std::string w = what;
    if (!is_valid(dtype))
      return {HCOMM_ERR_INVALID_ARG, w + ": invalid data type " +
                                         std::to_string(static_cast<int>(dtype)) +
                                         " (use a hcomm::DataType value)"};
    if (count > 0 && (send == nullptr || recv == nullptr))
      return {HCOMM_ERR_INVALID_ARG, w + ": null buffer with count " + std::to_string(count) +
                                         " (pass valid buffers, or count 0)"};
    if (count > (size_t{1} << 60) / dtype_size(dtype))
      return {HCOMM_ERR_INVALID_ARG, w + ": count " + std::to_string(count) + " is too large"};
    return {};
  }

  Status check_rank(const char* what, const char* role, int r) const {
    if (r < 0 || r >= cfg_.world_size)
      return {HCOMM_ERR_INVALID_ARG, std::string(what) + ": " + role + " " + std::to_string(r) +
                                         " is out of range [0, " + std::to_string(cfg_.world_size) +
                                         ")"};
    return {};
  }

 private:
  Config cfg_;
  std::unique_ptr<actors::CommunicatorControl> control_;
};

}  // namespace detail

namespace {

coll::OperationPtr make_op(coll::OpKind kind, const void* send, void* recv, size_t count,
                           DataType dtype) {
  auto op = std::make_shared<coll::Operation>();
  op->kind = kind;
  op->send = static_cast<const std::byte*>(send);
  op->recv = static_cast<std::byte*>(recv);
  op->count = count;
  op->dtype = dtype;
  return op;
}

Status check_config(const Config& cfg) {
  if (cfg.world_size < 1)
    return {HCOMM_ERR_INVALID_ARG,
            "world size not set: set HCOMM_WORLD_SIZE (or WORLD_SIZE, OMPI_COMM_WORLD_SIZE, "
            "SLURM_NTASKS), or launch with hcomm-run -n N"};
  if (cfg.rank < 0 || cfg.rank >= cfg.world_size)
    return {HCOMM_ERR_INVALID_ARG,
            "rank " + std::to_string(cfg.rank) + " is not in [0, " +
                std::to_string(cfg.world_size) +
                "): set HCOMM_RANK (or RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID)"};
  if (cfg.transport != "tcp" && cfg.transport != "auto")
    return {HCOMM_ERR_NO_DEVICE,
            "HCOMM_TRANSPORT=" + cfg.transport + " is not available in this build: use tcp"};
  if (cfg.sockets_per_peer < 1 || cfg.sockets_per_peer > 16)
    return {HCOMM_ERR_INVALID_ARG, "sockets_per_peer must be in [1, 16]"};
  if (cfg.chunk_bytes < 8) return {HCOMM_ERR_INVALID_ARG, "chunk_bytes must be at least 8"};
  if (cfg.actor_threads < 1) return {HCOMM_ERR_INVALID_ARG, "actor_threads must be at least 1"};
  return {};
}

}  // namespace

Expected<std::unique_ptr<Communicator>> Communicator::create(const Config& cfg) {
  Status st = check_config(cfg);
  if (!st.ok()) return st;
  log::set_rank(cfg.rank);
  auto control = actors::CommunicatorControl::establish(cfg);
  if (!control.ok()) {
    HCOMM_LOG(error, log::kInit, "%s", control.status().to_string().c_str());
    return control.status();
  }
  return std::unique_ptr<Communicator>(new Communicator(
      std::make_unique<detail::CommunicatorImpl>(cfg, std::move(control.value()))));
}

Expected<std::unique_ptr<Communicator>> Communicator::create_from_env() {
  auto cfg = Config::from_env();
  if (!cfg.ok()) return cfg.status();
  return create(cfg.value());
}

Communicator::Communicator(std::unique_ptr<detail::CommunicatorImpl> impl)
    : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

int Communicator::rank() const {
  return impl_->config().rank;
}
int Communicator::size() const {
  return impl_->config().world_size;
}
const Config& Communicator::config() const {
  return impl_->config();
}

Work Communicator::allreduce_async(const void* send, void* recv, size_t count, DataType dtype,
                                   ReduceOp op) {
  auto o = make_op(coll::OpKind::allreduce, send, recv, count, dtype);
  o->redop = op;
  o->invalid = impl_->check("allreduce", send, recv, count, dtype);
  if (o->invalid.ok() && !is_valid(op))
    o->invalid = {HCOMM_ERR_INVALID_ARG,
                  "allreduce: invalid reduce op " + std::to_string(static_cast<int>(op))};
  if (!o->invalid.ok())
    o->redop = ReduceOp::sum, o->dtype = is_valid(dtype) ? dtype : DataType::uint8;
  return impl_->submit(std::move(o));
}

Work Communicator::broadcast_async(void* buf, size_t count, DataType dtype, int root) {
  auto o = make_op(coll::OpKind::broadcast, buf, buf, count, dtype);
  o->root = root;
  o->invalid = impl_->check_rank("broadcast", "root", root);
  if (o->invalid.ok()) o->invalid = impl_->check("broadcast", buf, buf, count, dtype);
  if (!o->invalid.ok()) o->root = 0, o->dtype = is_valid(dtype) ? dtype : DataType::uint8;
  return impl_->submit(std::move(o));
}

Work Communicator::allgather_async(const void* send, void* recv, size_t count, DataType dtype) {
  auto o = make_op(coll::OpKind::allgather, send, recv, count, dtype);
  o->invalid = impl_->check("allgather", send, recv, count, dtype);
  if (!o->invalid.ok()) o->dtype = is_valid(dtype) ? dtype : DataType::uint8;
  return impl_->submit(std::move(o));
}

Work Communicator::reduce_scatter_async(const void* send, void* recv, size_t recv_count,
                                        DataType dtype, ReduceOp op) {
  auto o = make_op(coll::OpKind::reduce_scatter, send, recv, recv_count, dtype);
  o->redop = op;
  o->invalid = impl_->check("reduce_scatter", send, recv, recv_count, dtype);
  if (o->invalid.ok() && !is_valid(op))
    o->invalid = {HCOMM_ERR_INVALID_ARG,
                  "reduce_scatter: invalid reduce op " + std::to_string(static_cast<int>(op))};
  if (!o->invalid.ok())
    o->redop = ReduceOp::sum, o->dtype = is_valid(dtype) ? dtype : DataType::uint8;
  return impl_->submit(std::move(o));
}

Work Communicator::barrier_async() {
  return impl_->submit(make_op(coll::OpKind::barrier, nullptr, nullptr, 0, DataType::uint8));
}

Work Communicator::send_async(const void* buf, size_t count, DataType dtype, int peer, int tag) {
  auto o = make_op(coll::OpKind::send, buf, nullptr, count, dtype);
  o->peer = peer;
  o->tag = tag;
  o->invalid = impl_->check_rank("send", "peer", peer);
  if (o->invalid.ok() && peer == rank())
    o->invalid = {HCOMM_ERR_INVALID_ARG,
                  "send: peer " + std::to_string(peer) + " is this rank; copy the buffer instead"};
  if (o->invalid.ok() && tag < 0) o->invalid = {HCOMM_ERR_INVALID_ARG, "send: tag must be >= 0"};
  if (o->invalid.ok()) o->invalid = impl_->check("send", buf, buf, count, dtype);
  if (!o->invalid.ok()) o->dtype = is_valid(dtype) ? dtype : DataType::uint8;
  return impl_->submit(std::move(o));
}

Work Communicator::recv_async(void* buf, size_t count, DataType dtype, int peer, int tag) {
  auto o = make_op(coll::OpKind::recv, nullptr, buf, count, dtype);
  o->peer = peer;
  o->tag = tag;
  o->invalid = impl_->check_rank("recv", "peer", peer);
  if (o->invalid.ok() && peer == rank())
    o->invalid = {HCOMM_ERR_INVALID_ARG,
                  "recv: peer " + std::to_string(peer) + " is this rank; copy the buffer instead"};
  if (o->invalid.ok() && tag < 0) o->invalid = {HCOMM_ERR_INVALID_ARG, "recv: tag must be >= 0"};
  if (o->invalid.ok()) o->invalid = impl_->check("recv", buf, buf, count, dtype);
  if (!o->invalid.ok()) o->dtype = is_valid(dtype) ? dtype : DataType::uint8;
  return impl_->submit(std::move(o));
}

Status Communicator::allreduce(const void* send, void* recv, size_t count, DataType dtype,
                               ReduceOp op) {
  return allreduce_async(send, recv, count, dtype, op).wait(config().op_timeout);
}
Status Communicator::broadcast(void* buf, size_t count, DataType dtype, int root) {
  return broadcast_async(buf, count, dtype, root).wait(config().op_timeout);
}
Status Communicator::allgather(const void* send, void* recv, size_t count, DataType dtype) {
  return allgather_async(send, recv, count, dtype).wait(config().op_timeout);
}
Status Communicator::reduce_scatter(const void* send, void* recv, size_t recv_count, DataType dtype,
                                    ReduceOp op) {
  return reduce_scatter_async(send, recv, recv_count, dtype, op).wait(config().op_timeout);
}
Status Communicator::barrier() {
  return barrier_async().wait(config().op_timeout);
}
Status Communicator::send(const void* buf, size_t count, DataType dtype, int peer, int tag) {
  return send_async(buf, count, dtype, peer, tag).wait(config().op_timeout);
}
Status Communicator::recv(void* buf, size_t count, DataType dtype, int peer, int tag) {
  return recv_async(buf, count, dtype, peer, tag).wait(config().op_timeout);
}

}  // namespace hcomm
