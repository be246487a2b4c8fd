// actors/: the control plane. One Runtime per process owns the CAF actor system and the progress
// engine; each communicator has a communicator actor (tracks its peers and their links), one
// connection-manager actor per peer (establishes the peer's links and hears of their failure)
// and, under failover, a link supervisor actor (decides reconnections, fail-backs and peer loss
// from what the peers' reliable channels report; failover/link_supervisor.hpp).
// Operations never pass through a mailbox: the calling thread numbers and plans them and hands
// the schedule to the progress engine as a descriptor: an application thread's round trip
// through an actor costs many times a small operation's whole latency.
//
// This file: every message the actors exchange — the whole protocol in one place.
#pragma once

#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "failover/link_supervisor.hpp"

namespace hcomm::failover {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ChannelEvent& x) {
  return f(caf::meta::type_name("channel_event"), x.peer, x.kind, x.slot, x.from, x.epoch,
           x.silent_ms, x.reason);
}

}  // namespace hcomm::failover

namespace hcomm::actors {

using connect_atom = caf::atom_constant<caf::atom("connect")>;
using peer_up_atom = caf::atom_constant<caf::atom("peer_up")>;
using peer_fail_atom = caf::atom_constant<caf::atom("peer_fail")>;
using link_up_atom = caf::atom_constant<caf::atom("link_up")>;
using link_fail_atom = caf::atom_constant<caf::atom("link_fail")>;
using link_down_atom = caf::atom_constant<caf::atom("link_down")>;
using register_atom = caf::atom_constant<caf::atom("register")>;
using deregister_atom = caf::atom_constant<caf::atom("deregister")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using channel_atom = caf::atom_constant<caf::atom("channel")>;
using timer_atom = caf::atom_constant<caf::atom("timer")>;
using qos_join_atom = caf::atom_constant<caf::atom("qos_join")>;
using qos_leave_atom = caf::atom_constant<caf::atom("qos_leave")>;
using qos_change_atom = caf::atom_constant<caf::atom("qos_chg")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;

/// One per communicator.
using communicator_actor = caf::typed_actor<
    /// A connection manager's peer is reachable (all its links up).
    caf::reacts_to<peer_up_atom, int32_t>,
    /// A peer could not be reached while the communicator was being created.
    caf::reacts_to<peer_fail_atom, int32_t, std::string>,
    /// An established peer's link failed (its operations have been failed by the engine).
    caf::reacts_to<link_down_atom, int32_t, std::string>>;

/// One per peer of a communicator.
using connection_manager_actor = caf::typed_actor<
    /// Establish the links to the peer.
    caf::reacts_to<connect_atom>,
    /// From the progress engine: the link is up ("tcp a.b.c.d:p (rank r)").
    caf::reacts_to<link_up_atom, std::string>,
    /// From the progress engine: establishment failed (reason).
    caf::reacts_to<link_fail_atom, std::string>,
    /// From the progress engine: the established link failed (reason).
    caf::reacts_to<link_down_atom, std::string>>;

/// One per communicator under failover: a LinkSupervisor per peer. Commands go back to the
/// progress engine as posted tasks (the links live there), never through a mailbox.
using link_supervisor_actor = caf::typed_actor<
    /// From the progress engine: what a peer's reliable channel did or saw.
    caf::reacts_to<channel_atom, failover::ChannelEvent>,
    /// A timer a LinkSupervisor asked for: (peer, token).
    caf::reacts_to<timer_atom, int32_t, uint64_t>>;

/// One per process (qos/qos_controller.hpp): divides the link among the QoS classes of the
/// host (the host board) every few milliseconds and paces this process's classes (the engine's
/// SendGate, through posted tasks).
using qos_controller_actor = caf::typed_actor<
    /// A communicator with QoS: its id, its host's id (which board), its board slot, the
    /// link's capacity and the fallback's, in bytes per second.
    caf::reacts_to<qos_join_atom, uint64_t, std::string, int32_t, double, double>,
    /// It is gone (its slot released).
    caf::reacts_to<qos_leave_atom, uint64_t>,
    /// Its class changed, or traffic moved to or from a fallback link: divide again now.
    caf::reacts_to<qos_change_atom>,
    /// The periodic division.
    caf::reacts_to<tick_atom>>;

/// One per RDMA device of the process: the control side of the device's registration cache
/// (transport/rdma/mr_cache.hpp) — the application's explicit registrations and the statistics.
/// Links look the cache up themselves (a lookup per large send cannot take a mailbox hop).
/// Replies carry a status code and its message.
using mr_cache_actor = caf::typed_actor<
    /// hcomm::register_memory: [address, address + bytes) stays registered until deregistered.
    caf::replies_to<register_atom, uint64_t, uint64_t>::with<int32_t, std::string>,
    /// hcomm::deregister_memory (the address and size that were registered).
    caf::replies_to<deregister_atom, uint64_t, uint64_t>::with<int32_t, std::string>,
    /// hits, misses, evictions, invalidations, pinned bytes, entries.
    caf::replies_to<stats_atom>::with<std::vector<uint64_t>>>;

}  // namespace hcomm::actors
