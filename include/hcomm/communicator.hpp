// hcomm public API: a communicator — a group of ranks that run collectives and point-to-point
// operations together.
//
// Semantics follow MPI/NCCL: every rank of a communicator calls the same collectives in the same
// order with matching sizes; `count` is in elements of `dtype`. Out-of-place and in-place
// (send == recv) forms are both supported. Buffers must stay valid until the Work completes.
// Bad arguments never crash: the returned Work completes with HCOMM_ERR_INVALID_ARG, and for a
// collective the other ranks' matching operation fails with the same code naming this rank.
#pragma once

#include <cstddef>
#include <memory>

#include "hcomm/config.hpp"
#include "hcomm/status.hpp"
#include "hcomm/types.hpp"
#include "hcomm/work.hpp"

namespace hcomm {

namespace detail {
class CommunicatorImpl;
}

class Communicator {
 public:
  /// Joins the world: meets the other ranks at the rendezvous root, connects to every peer and
  /// returns once all links are up. Collective over all `cfg.world_size` ranks. Fails with
  /// HCOMM_ERR_TIMEOUT naming the ranks that never arrived after `cfg.connect_timeout`.
  static Expected<std::unique_ptr<Communicator>> create(const Config& cfg);
  /// Same, with Config::from_env().
  static Expected<std::unique_ptr<Communicator>> create_from_env();

  /// Fails the operations still in flight with HCOMM_ERR_ABORTED and closes the links.
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  const Config& config() const;

  // ---- asynchronous forms
  Work allreduce_async(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op);
  /// `buf` is read on `root` and written everywhere else.
  Work broadcast_async(void* buf, size_t count, DataType dtype, int root);
  /// `recv` holds size() * count elements, rank i's block at offset i * count.
  Work allgather_async(const void* send, void* recv, size_t count, DataType dtype);
  /// `send` holds size() * recv_count elements; rank i receives block i reduced over all ranks.
  /// In place: send == recv, and the result lands in block rank() of it.
  Work reduce_scatter_async(const void* send, void* recv, size_t recv_count, DataType dtype,
                            ReduceOp op);
  Work barrier_async();
  /// Messages between one pair of ranks with the same tag arrive in the order they were sent.
  Work send_async(const void* buf, size_t count, DataType dtype, int peer, int tag = 0);
  Work recv_async(void* buf, size_t count, DataType dtype, int peer, int tag = 0);

  // ---- blocking forms: the asynchronous form, waited on for config().op_timeout
  Status allreduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op);
  Status broadcast(void* buf, size_t count, DataType dtype, int root);
  Status allgather(const void* send, void* recv, size_t count, DataType dtype);
  Status reduce_scatter(const void* send, void* recv, size_t recv_count, DataType dtype,
                        ReduceOp op);
  Status barrier();
  Status send(const void* buf, size_t count, DataType dtype, int peer, int tag = 0);
  Status recv(void* buf, size_t count, DataType dtype, int peer, int tag = 0);

 private:
  explicit Communicator(std::unique_ptr<detail::CommunicatorImpl> impl);
  std::unique_ptr<detail::CommunicatorImpl> impl_;
};

}  // namespace hcomm
