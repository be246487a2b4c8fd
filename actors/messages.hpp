// actors/: the control plane. One Runtime per process owns the CAF actor system and the progress
// engine; each communicator has a communicator actor (tracks its peers and their links) and one
// connection-manager actor per peer (establishes the peer's links and hears of their failure).
// Operations never pass through a mailbox: the calling thread numbers and plans them and hands
// the schedule to the progress engine as a descriptor — an actor hop (40-100 us here) would cost
// ten times a small operation's whole latency.
//
// This file: every message the actors exchange — the whole protocol in one place.
#pragma once

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

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
