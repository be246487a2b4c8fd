// hcomm public API for CAF applications: a communicator as a typed actor.
//
// The only public header that includes CAF (the rest of the API is CAF-free). An application
// spawns a communicator actor in its own actor system, sends it one request per operation and
// gets one reply when the operation completes; it subscribes to link events (failover,
// failback, ...) and hears of them as messages, so that its scheduler can plan around a slow
// or lost link while hcomm reconnects in the background.
//
//   caf::actor_system sys{cfg};
//   auto comm = hcomm::actor::spawn_communicator(sys, hcomm::Config::from_env());
//   if (!comm) { print(comm.status()); return 1; }
//   self->request(*comm, caf::infinite, hcomm::actor::allreduce_request{in, out, n,
//                 hcomm::DataType::float32, hcomm::ReduceOp::sum})
//       .then([](const hcomm::actor::op_done&) { ... },
//             [](const caf::error& e) { print(hcomm::actor::status_of(e)); });
//
// Data path. The actor starts each operation at once on its progress engine (as
// Communicator::*_async does: no further actor is involved) and returns. No CAF worker ever
// blocks, however many requests are in flight. When the operation completes, the thread that
// completed it (hcomm's progress engine) enqueues the reply straight into the requester's
// mailbox (CAF's lock-free inbox): the communicator actor is not on the reply's path, and the
// reply's op_done::completed_at says when the data plane finished, for latency accounting.
//
// Buffers. A request carries addresses in this process (the actor does not cross nodes). Every
// buffer a request names must stay valid, and unread and unwritten by anyone else, until its
// reply (op_done or an error) has arrived — also when the requester gave up waiting (a request
// timeout cancels nothing) and when the requester itself stops first: keep the memory alive
// past the requester (a shared_ptr captured by the reply handler, or state that outlives it).
// Once the communicator actor is down, every operation it started has finished (its
// communicator is destroyed with it, which fails what is still in flight).
//
// Failures. A failed operation answers with a caf::error of category "hcomm" whose code is the
// hcomm::StatusCode and whose context holds the message; status_of() turns it (or any CAF
// error the request ended with) into a Status.
//
// Exit. The actor stops, and its exit reason (seen by monitors and links) says why:
//   - a peer was lost (its peer_lost link event, or an operation that failed with
//     HCOMM_ERR_PEER_LOST): error HCOMM_ERR_PEER_LOST naming the rank, after subscribers got a
//     peer_lost event for it (a communicator with a lost rank runs no collective; make a new
//     one, or use Communicator::shrink() without the actor);
//   - an abort_atom request: error HCOMM_ERR_ABORTED with its reason (the peers' operations on
//     this communicator fail too, as with Communicator::abort());
//   - a close_atom message, or an exit message from the application (send_exit), or no handle
//     left: exit_reason::normal, the exit message's reason, or exit_reason::unreachable.
// In each case the communicator is destroyed as the actor stops: what was in flight fails
// (HCOMM_ERR_ABORTED, or the peer-loss error) and is answered.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "hcomm/communicator.hpp"

namespace hcomm::actor {

// ---- operation requests: the fields of the Communicator method of the same name, whose
// comments (hcomm/communicator.hpp) say what each means. Each is answered with op_done or an
// error once the operation completed.

struct HCOMM_API allreduce_request {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
};
struct HCOMM_API broadcast_request {
  void* buf = nullptr;
  size_t count = 0;
  DataType dtype = DataType::float32;
  int root = 0;
};
struct HCOMM_API reduce_request {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
};
struct HCOMM_API allgather_request {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DataType dtype = DataType::float32;
};
struct HCOMM_API allgatherv_request {
  const void* send = nullptr;
  void* recv = nullptr;
  std::vector<size_t> recv_counts;
  std::vector<size_t> recv_displs;
  DataType dtype = DataType::float32;
};
struct HCOMM_API reduce_scatter_request {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t recv_count = 0;
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
};
struct HCOMM_API alltoall_request {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DataType dtype = DataType::float32;
};
struct HCOMM_API alltoallv_request {
  const void* send = nullptr;
  std::vector<size_t> send_counts;
  std::vector<size_t> send_displs;
  void* recv = nullptr;
  std::vector<size_t> recv_counts;
  std::vector<size_t> recv_displs;
  DataType dtype = DataType::float32;
};
struct HCOMM_API gather_request {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DataType dtype = DataType::float32;
  int root = 0;
};
struct HCOMM_API scatter_request {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DataType dtype = DataType::float32;
  int root = 0;
};
struct HCOMM_API barrier_request {};
struct HCOMM_API send_request {
  const void* buf = nullptr;
  size_t count = 0;
  DataType dtype = DataType::uint8;
  int peer = -1;
  int tag = 0;
};
/// peer = Communicator::kAnySource takes the first matching message from any rank
/// (op_done::source says whose).
struct HCOMM_API recv_request {
  void* buf = nullptr;
  size_t count = 0;
  DataType dtype = DataType::uint8;
  int peer = -1;
  int tag = 0;
};
struct HCOMM_API batch_request {
  std::vector<PointToPointOp> ops;
};

/// The reply to an operation that succeeded.
struct HCOMM_API op_done {
  /// A receive from any source: the rank whose message it took; -1 otherwise.
  int source = -1;
  /// When the data plane completed the operation (Work::completed_at()).
  std::chrono::steady_clock::time_point completed_at;
};

/// The reply to info_atom.
struct HCOMM_API communicator_info {
  int rank = -1;
  int size = 0;
  std::vector<RankInfo> ranks;  ///< Communicator::ranks()
};

// ---- control messages
/// The sender hears of every later LinkEvent as a message of that type (a typed sender must
/// handle `void(hcomm::LinkEvent)`); answered with ok_atom. A subscriber that stops is dropped.
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
/// The sender hears of no more link events; answered with ok_atom.
using unsubscribe_atom = caf::atom_constant<caf::atom("unsubscrib")>;
/// (set_qos_atom, QosClass): Communicator::set_qos; ok_atom or the error it returned.
using set_qos_atom = caf::atom_constant<caf::atom("set_qos")>;
/// Answered with the QosClass in force.
using get_qos_atom = caf::atom_constant<caf::atom("get_qos")>;
/// (set_compression_atom, Compression): the codec of the operations started from now on.
using set_compression_atom = caf::atom_constant<caf::atom("set_compr")>;
/// Answered with the Compression in force.
using get_compression_atom = caf::atom_constant<caf::atom("get_compr")>;
/// Answered with communicator_info.
using info_atom = caf::atom_constant<caf::atom("info")>;
/// Answered with Communicator::failover_stats().
using failover_stats_atom = caf::atom_constant<caf::atom("fo_stats")>;
/// (abort_atom, reason): Communicator::abort(reason), then the actor stops with
/// HCOMM_ERR_ABORTED.
using abort_atom = caf::atom_constant<caf::atom("abort")>;
/// The actor destroys its communicator and stops normally.
using close_atom = caf::atom_constant<caf::atom("close")>;

/// The communicator actor's interface: every message it takes and what it answers.
using communicator_actor = caf::typed_actor<
    caf::replies_to<allreduce_request>::with<op_done>,
    caf::replies_to<broadcast_request>::with<op_done>,
    caf::replies_to<reduce_request>::with<op_done>,
    caf::replies_to<allgather_request>::with<op_done>,
    caf::replies_to<allgatherv_request>::with<op_done>,
    caf::replies_to<reduce_scatter_request>::with<op_done>,
    caf::replies_to<alltoall_request>::with<op_done>,
    caf::replies_to<alltoallv_request>::with<op_done>,
    caf::replies_to<gather_request>::with<op_done>, caf::replies_to<scatter_request>::with<op_done>,
    caf::replies_to<barrier_request>::with<op_done>, caf::replies_to<send_request>::with<op_done>,
    caf::replies_to<recv_request>::with<op_done>, caf::replies_to<batch_request>::with<op_done>,
    caf::replies_to<subscribe_atom>::with<caf::ok_atom>,
    caf::replies_to<unsubscribe_atom>::with<caf::ok_atom>,
    caf::replies_to<set_qos_atom, QosClass>::with<caf::ok_atom>,
    caf::replies_to<get_qos_atom>::with<QosClass>,
    caf::replies_to<set_compression_atom, Compression>::with<caf::ok_atom>,
    caf::replies_to<get_compression_atom>::with<Compression>,
    caf::replies_to<info_atom>::with<communicator_info>,
    caf::replies_to<failover_stats_atom>::with<FailoverStats>,
    caf::reacts_to<abort_atom, std::string>, caf::reacts_to<close_atom>>;

/// Creates a communicator (collective, as Communicator::create: it blocks the calling thread
/// until every rank joined or cfg.connect_timeout passed, so call it from main() or a detached
/// actor, not from a CAF worker) and spawns its actor in `sys`. The communicator's own runtime
/// (progress engine, internal actors) is hcomm's and does not use `sys`'s workers.
HCOMM_API Expected<communicator_actor> spawn_communicator(caf::actor_system& sys,
                                                          const Config& cfg);
/// Spawns the actor of a communicator the application made; the actor owns it from now on.
HCOMM_API communicator_actor spawn_communicator(caf::actor_system& sys,
                                                std::unique_ptr<Communicator> comm);

/// The category of hcomm's errors in CAF ("hcomm").
constexpr caf::atom_value error_category = caf::atom("hcomm");
/// A failed Status as a CAF error (code, category "hcomm", the message as context).
HCOMM_API caf::error make_error(const Status& status);
/// What a request's error, or an exit reason, means as a Status: hcomm's own errors as they
/// were; request_timeout as HCOMM_ERR_TIMEOUT; a communicator actor that is gone (or stopped
/// by the application) as HCOMM_ERR_ABORTED; none as HCOMM_SUCCESS.
HCOMM_API Status status_of(const caf::error& error);

}  // namespace hcomm::actor

// The messages are addresses and values of this process: local only, never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::allreduce_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::broadcast_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::reduce_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::allgather_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::allgatherv_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::reduce_scatter_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::alltoall_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::alltoallv_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::gather_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::scatter_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::barrier_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::send_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::recv_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::batch_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::op_done)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::actor::communicator_info)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::LinkEvent)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::FailoverStats)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::QosClass)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hcomm::Compression)
