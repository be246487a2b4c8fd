// The QoS controller: one actor per process (actors/messages.hpp, qos_controller_actor). Every
// kPeriod it reads the host board — every class of every process on the host, and which have
// traffic — divides the link with allocate_shares() and gives this process's classes their
// rates in the SendGate. All processes compute the same division from the same board, so
// tenants in separate jobs share the link as their classes say, within a period of a change.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace hcomm::actors {

class Runtime;

constexpr std::chrono::milliseconds kQosControllerPeriod{10};

/// A communicator's class joins the controller (spawned on first use).
void join_qos_controller(Runtime& runtime, uint64_t comm, const std::string& host_id, int slot,
                         double capacity, double fallback_capacity);
void leave_qos_controller(Runtime& runtime, uint64_t comm);
/// Divide again now (a class changed, or traffic moved to or from a fallback link).
void nudge_qos_controller(Runtime& runtime);

}  // namespace hcomm::actors
