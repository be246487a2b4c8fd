// The job-key handshake (core/auth_handshake.hpp) over an application protocol's Connections:
// each of its messages carries one step of the handshake, before hcomm sends any frame on it.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "core/job_key.hpp"
#include "hcomm/protocol.hpp"
#include "hcomm/status.hpp"

namespace hcomm::transport {

/// Runs the handshake on every connection of `connections` (by peer rank) at once, this rank
/// connecting to lower ranks and accepting from higher ones, until all are done or `deadline`.
/// Blocks the calling thread (creation's), polling the connections. Fails with
/// HCOMM_ERR_TRANSPORT naming the first peer whose proof is wrong or missing (also logged once
/// per peer), or HCOMM_ERR_TIMEOUT naming the peers that did not finish.
Status authenticate_connections(const std::string& protocol, int my_rank,
                                const std::shared_ptr<const core::JobKey>& key,
                                std::map<int, std::unique_ptr<Connection>>& connections,
                                std::chrono::steady_clock::time_point deadline);

}  // namespace hcomm::transport
