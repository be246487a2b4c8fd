// The communicator actor of hcomm/actor.hpp: a stateful typed actor that owns one Communicator.
//
// Each operation request starts the operation (the Communicator's *_async form: straight to the
// progress engine) and registers a completion callback that answers the request from whichever
// thread completes it (Reply): the reply goes from there straight into the requester's mailbox,
// never through this actor's.
//
// Link events come from the Communicator's listener (the progress engine thread) as a message
// outside the public interface (`internal_actor` extends it) and go to every subscriber.
#include <algorithm>
#include <caf/actor_cast.hpp>
#include <caf/delegated.hpp>
#include <caf/exit_reason.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/make_message.hpp>
#include <caf/response_promise.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <set>

#include "hcomm/actor.hpp"

namespace hcomm::actor {
namespace {

using lost_atom = caf::atom_constant<caf::atom("hc_lost")>;

/// The public interface plus what the communicator itself sends: its listener's link events, and
/// (lost_atom, why) from an operation that failed with HCOMM_ERR_PEER_LOST.
using internal_actor =
    communicator_actor::extend<caf::reacts_to<LinkEvent>, caf::reacts_to<lost_atom, std::string>>;

struct CommunicatorState {
  std::shared_ptr<Communicator> comm;  // the only owner (spawn's arguments must be copyable)
  std::vector<caf::actor_addr> subscribers;
  std::set<int> announced_lost;  ///< peers whose peer_lost event went to the subscribers
  int lost_checks = 0;
  static inline const char* name = "hcomm_communicator";

  CommunicatorState() = default;
  CommunicatorState(const CommunicatorState&) = delete;
  CommunicatorState& operator=(const CommunicatorState&) = delete;
  ~CommunicatorState() {
    if (comm) comm->on_link_event(nullptr);
  }
};

using Self = internal_actor::stateful_pointer<CommunicatorState>;
constexpr int kLostChecks = 100;

/// Sends `msg` to the actor behind `target` (if it still lives) from any thread: a mailbox
/// enqueue with no execution context is CAF's thread-safe path.
void send_from_any_thread(const caf::weak_actor_ptr& target, caf::message msg) {
  if (auto live = caf::actor_cast<caf::strong_actor_ptr>(target))
    live->enqueue(nullptr, caf::make_message_id(), std::move(msg), nullptr);
}

/// Where the answer to one request goes, enqueued from any thread: a mailbox enqueue with no
/// execution context is CAF's thread-safe path (a response_promise must be delivered on its
/// actor's thread, whose execution context it uses).
class Reply {
 public:
  explicit Reply(Self self) {
    const auto promise = self->make_response_promise();  // marks the request as answered later
    from_ = self->ctrl();
    to_ = promise.source();
    stages_ = promise.stages();
    id_ = promise.id();
  }
  void deliver(caf::message msg) {
    if (!stages_.empty()) {  // a delegated request goes on to its next stage
      auto next = std::move(stages_.back());
      stages_.pop_back();
      next->enqueue(
          caf::make_mailbox_element(std::move(to_), id_, std::move(stages_), std::move(msg)),
          nullptr);
    } else if (to_ && !id_.is_async()) {
      to_->enqueue(std::move(from_), id_.response_id(), std::move(msg), nullptr);
    }
    to_.reset();
    from_.reset();
  }

 private:
  caf::strong_actor_ptr from_, to_;
  caf::mailbox_element::forwarding_stack stages_;
  caf::message_id id_;
};

/// Answers the current request when `work` completes, from the completing thread.
caf::delegated<op_done> answer_when_done(Self self, Work work) {
  // The callback holds `work` (and so its completion) until it runs; it runs exactly once:
  // when the operation completes, or when the communicator is destroyed with it in flight.
  work.on_complete([reply = Reply(self), work, weak = caf::actor_cast<caf::weak_actor_ptr>(self)](
                       const Status& status) mutable {
    reply.deliver(status.ok() ? caf::make_message(op_done{work.source(), work.completed_at()})
                              : caf::make_message(make_error(status)));
    if (status.code() == HCOMM_ERR_PEER_LOST)
      send_from_any_thread(weak, caf::make_message(lost_atom::value, status.message()));
  });
  return {};
}

void send_to_subscribers(Self self, const LinkEvent& event) {
  // Sent from this actor: a subscriber of several communicators tells them apart by sender.
  const auto me = caf::actor_cast<caf::strong_actor_ptr>(self);
  for (const auto& addr : self->state.subscribers)
    if (auto sub = caf::actor_cast<caf::strong_actor_ptr>(addr))
      sub->enqueue(me, caf::make_message_id(), caf::make_message(event), self->context());
  if (event.kind == LinkEvent::Kind::peer_lost) self->state.announced_lost.insert(event.peer);
}

/// A rank is lost: the subscribers hear of every lost rank they have not heard of (a peer whose
/// links have no supervisor is lost without a link event), then the actor stops.
void stop_for_lost_peers(Self self, const std::string& why, int known = -1) {
  std::string ranks;
  auto lost = self->state.comm->lost_peers();
  if (known >= 0 && std::find(lost.begin(), lost.end(), known) == lost.end()) lost.push_back(known);
  std::sort(lost.begin(), lost.end());
  // An operation may fail with HCOMM_ERR_PEER_LOST a moment before the communicator lists the
  // rank as lost: look again for up to kLostChecks x 10 ms before stopping without its name.
  if (lost.empty() && self->state.lost_checks++ < kLostChecks) {
    self->delayed_send(caf::actor_cast<internal_actor>(self), std::chrono::milliseconds(10),
                       lost_atom::value, why);
    return;
  }
  for (int peer : lost) {
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer);
    if (self->state.announced_lost.count(peer)) continue;
    LinkEvent e;
    e.when = std::chrono::system_clock::now();
    e.peer = peer;
    e.kind = LinkEvent::Kind::peer_lost;
    e.reason = why;
    send_to_subscribers(self, e);
  }
  self->quit(
      make_error({HCOMM_ERR_PEER_LOST, (ranks.empty() ? std::string("a rank") : "rank " + ranks) +
                                           " was lost: " + why}));
}

void forward_link_event(Self self, const LinkEvent& event) {
  send_to_subscribers(self, event);
  if (event.kind == LinkEvent::Kind::peer_lost) stop_for_lost_peers(self, event.reason, event.peer);
}

/// The behavior: every request starts its operation and answers when it completes (a request
/// with bad arguments too: its Work completes with HCOMM_ERR_INVALID_ARG).
internal_actor::behavior_type communicator(Self self, std::shared_ptr<Communicator> comm) {
  self->state.comm = std::move(comm);
  auto& c = *self->state.comm;
  c.on_link_event([weak = caf::actor_cast<caf::weak_actor_ptr>(self)](const LinkEvent& event) {
    send_from_any_thread(weak, caf::make_message(event));  // on the engine thread
  });
  self->set_down_handler([self](const caf::down_msg& down) {
    auto& subs = self->state.subscribers;
    subs.erase(std::remove(subs.begin(), subs.end(), down.source), subs.end());
  });
  return {
      [self, &c](const allreduce_request& r) {
        return answer_when_done(self, c.allreduce_async(r.send, r.recv, r.count, r.dtype, r.op));
      },
      [self, &c](const broadcast_request& r) {
        return answer_when_done(self, c.broadcast_async(r.buf, r.count, r.dtype, r.root));
      },
      [self, &c](const reduce_request& r) {
        return answer_when_done(self,
                                c.reduce_async(r.send, r.recv, r.count, r.dtype, r.op, r.root));
      },
      [self, &c](const allgather_request& r) {
        return answer_when_done(self, c.allgather_async(r.send, r.recv, r.count, r.dtype));
      },
      [self, &c](const allgatherv_request& r) {
        return answer_when_done(
            self, c.allgatherv_async(r.send, r.recv, r.recv_counts, r.recv_displs, r.dtype));
      },
      [self, &c](const reduce_scatter_request& r) {
        return answer_when_done(
            self, c.reduce_scatter_async(r.send, r.recv, r.recv_count, r.dtype, r.op));
      },
      [self, &c](const alltoall_request& r) {
        return answer_when_done(self, c.alltoall_async(r.send, r.recv, r.count, r.dtype));
      },
      [self, &c](const alltoallv_request& r) {
        return answer_when_done(
            self, c.alltoallv_async(r.send, r.send_counts, r.send_displs, r.recv, r.recv_counts,
                                    r.recv_displs, r.dtype));
      },
      [self, &c](const gather_request& r) {
        return answer_when_done(self, c.gather_async(r.send, r.recv, r.count, r.dtype, r.root));
      },
      [self, &c](const scatter_request& r) {
        return answer_when_done(self, c.scatter_async(r.send, r.recv, r.count, r.dtype, r.root));
      },
      [self, &c](const barrier_request&) { return answer_when_done(self, c.barrier_async()); },
      [self, &c](const send_request& r) {
        return answer_when_done(self, c.send_async(r.buf, r.count, r.dtype, r.peer, r.tag));
      },
      [self, &c](const recv_request& r) {
        return answer_when_done(self, c.recv_async(r.buf, r.count, r.dtype, r.peer, r.tag));
      },
      [self, &c](const batch_request& r) { return answer_when_done(self, c.batch_async(r.ops)); },
      [self](subscribe_atom) {
        const auto addr = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto& subs = self->state.subscribers;
        if (addr && std::find(subs.begin(), subs.end(), addr) == subs.end()) {
          subs.push_back(addr);
          self->monitor(addr);
        }
        return caf::ok_atom::value;
      },
      [self](unsubscribe_atom) {
        const auto addr = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto& subs = self->state.subscribers;
        subs.erase(std::remove(subs.begin(), subs.end(), addr), subs.end());
        if (addr) self->demonitor(addr);
        return caf::ok_atom::value;
      },
      [&c](set_qos_atom, const QosClass& qos) -> caf::result<caf::ok_atom> {
        Status st = c.set_qos(qos);
        if (!st.ok()) return make_error(st);
        return caf::ok_atom::value;
      },
      [&c](get_qos_atom) { return c.qos(); },
      [&c](set_compression_atom, Compression mode) {
        c.set_compression(mode);
        return caf::ok_atom::value;
      },
      [&c](get_compression_atom) { return c.compression(); },
      [&c](info_atom) {
        return communicator_info{c.rank(), c.size(), c.ranks()};
      },
      [&c](failover_stats_atom) { return c.failover_stats(); },
      [self, &c](abort_atom, const std::string& reason) {
        c.abort(reason);
        self->quit(make_error({HCOMM_ERR_ABORTED, "the communicator was aborted: " + reason}));
      },
      [self](close_atom) { self->quit(); },
      [self](const LinkEvent& event) { forward_link_event(self, event); },
      [self](lost_atom, const std::string& why) { stop_for_lost_peers(self, why); },
  };
}

}  // namespace

Expected<communicator_actor> spawn_communicator(caf::actor_system& sys, const Config& cfg) {
  auto comm = Communicator::create(cfg);
  if (!comm.ok()) return comm.status();
  return spawn_communicator(sys, std::move(comm.value()));
}

communicator_actor spawn_communicator(caf::actor_system& sys, std::unique_ptr<Communicator> comm) {
  internal_actor handle = sys.spawn(communicator, std::shared_ptr<Communicator>(std::move(comm)));
  return handle;
}

caf::error make_error(const Status& status) {
  return caf::error(static_cast<uint8_t>(status.code()), error_category,
                    caf::make_message(status.message()));
}

Status status_of(const caf::error& error) {
  if (!error) return {};
  if (error.category() == error_category) {
    const auto& context = error.context();
    std::string message =
        context.match_elements<std::string>() ? context.get_as<std::string>(0) : std::string();
    return {static_cast<StatusCode>(error.code()), std::move(message)};
  }
  if (error == caf::sec::request_timeout)
    return {HCOMM_ERR_TIMEOUT,
            "the request's deadline passed before its operation completed; the operation is not "
            "cancelled: keep its buffers until the communicator actor is down"};
  if (error == caf::sec::request_receiver_down)
    return {HCOMM_ERR_ABORTED, "the communicator actor is gone: spawn a new one"};
  if (error.category() == caf::atom("exit"))
    return {HCOMM_ERR_ABORTED, "the communicator actor stopped: " + caf::to_string(error)};
  return {HCOMM_ERR_INTERNAL, "CAF error: " + caf::to_string(error)};
}

}  // namespace hcomm::actor
