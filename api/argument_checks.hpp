// The checks every operation's arguments get before it is planned: each returns OK or
// HCOMM_ERR_INVALID_ARG with a message that names the operation (`what`), the argument and what to
// pass instead. A rejected operation is still submitted (its peers learn of the failure) with
// fields sanitize_rejected() made safe to put in a frame header.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <vector>

#include "collectives/operation.hpp"
#include "hcomm/config.hpp"
#include "hcomm/status.hpp"
#include "hcomm/types.hpp"

namespace hcomm::api {

Status check_type(const char* what, DataType dtype);
/// An invalid op, or a bitwise op on a floating type.
Status check_op(const char* what, ReduceOp op, DataType dtype);
/// `count` elements of `dtype` at `p` (`role`: "send", "recv", ...); null only with count 0.
Status check_buffer(const char* what, const char* role, const void* p, size_t count,
                    DataType dtype);
/// `r` (the `role`: root, peer) is a rank of a communicator of `world_size`.
Status check_rank(const char* what, const char* role, int r, int world_size);
/// One count and one displacement per rank, each of a sane size.
Status check_counts(const char* what, const char* role, const std::vector<size_t>& counts,
                    const std::vector<size_t>& displs, int world_size);
/// A Config a communicator can be created from (rank, world size, limits).
Status check_config(const Config& cfg);

/// The first failed check, or success.
Status first_failure(std::initializer_list<Status> checks);
/// A rejected operation still travels (so peers learn of the failure), with fields every rank
/// can put in a frame header.
void sanitize_rejected(collectives::Operation& op);

}  // namespace hcomm::api
