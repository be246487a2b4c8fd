#include "api/argument_checks.hpp"

#include "bootstrap/launch_env.hpp"

#include <algorithm>
#include <string>

namespace hcomm::api {

Status check_type(const char* what, DataType dtype) {
  if (is_valid(dtype)) return {};
  return {HCOMM_ERR_INVALID_ARG, std::string(what) + ": invalid data type " +
                                     std::to_string(static_cast<int>(dtype)) +
                                     " (use a hcomm::DataType value)"};
}

Status check_op(const char* what, ReduceOp op, DataType dtype) {
  if (!is_valid(op))
    return {HCOMM_ERR_INVALID_ARG, std::string(what) + ": invalid reduce op " +
                                       std::to_string(static_cast<int>(op)) +
                                       " (use a hcomm::ReduceOp value)"};
  if (is_valid(dtype) && !reduces(op, dtype))
    return {HCOMM_ERR_INVALID_ARG, std::string(what) + ": " + reduce_op_name(op) +
                                       " reduces integer types only, not " + dtype_name(dtype) +
                                       " (use int8, uint8, int32 or int64)"};
  return {};
}

Status check_buffer(const char* what, const char* role, const void* p, size_t count,
                    DataType dtype) {
  if (count > (size_t{1} << 60) / std::max<size_t>(1, dtype_size(dtype)))
    return {HCOMM_ERR_INVALID_ARG,
            std::string(what) + ": count " + std::to_string(count) + " is too large"};
  if (count > 0 && p == nullptr)
    return {HCOMM_ERR_INVALID_ARG, std::string(what) + ": null " + role + (*role ? " " : "") +
                                       "buffer with " + std::to_string(count) +
                                       " elements (pass a valid buffer, or count 0)"};
  return {};
}

Status check_rank(const char* what, const char* role, int r, int world_size) {
  if (r < 0 || r >= world_size)
    return {HCOMM_ERR_INVALID_ARG, std::string(what) + ": " + role + " " + std::to_string(r) +
                                       " is out of range [0, " + std::to_string(world_size) + ")"};
  return {};
}

Status check_counts(const char* what, const char* role, const std::vector<size_t>& counts,
                    const std::vector<size_t>& displs, int world_size) {
  const size_t n = static_cast<size_t>(world_size);
  if (counts.size() != n || displs.size() != n)
    return {HCOMM_ERR_INVALID_ARG,
            std::string(what) + ": " + role + " counts and displacements need " +
                std::to_string(n) + " entries each (one per rank), got " +
                std::to_string(counts.size()) + " and " + std::to_string(displs.size())};
  for (size_t i = 0; i < n; ++i)
    if (counts[i] > (size_t{1} << 56) || displs[i] > (size_t{1} << 56))
      return {HCOMM_ERR_INVALID_ARG,
              std::string(what) + ": " + role + " entry " + std::to_string(i) + " is too large"};
  return {};
}

Status check_config(const Config& cfg) {
  if (cfg.world_size < 1)
    return {HCOMM_ERR_INVALID_ARG, "world size not set: set " + bootstrap::world_size_variables() +
                                       ", or launch with hcomm-run -n N"};
  if (cfg.rank < 0 || cfg.rank >= cfg.world_size)
    return {HCOMM_ERR_INVALID_ARG, "rank " + std::to_string(cfg.rank) + " is not in [0, " +
                                       std::to_string(cfg.world_size) + "): set " +
                                       bootstrap::rank_variables()};
  if (cfg.sockets_per_peer < 1 || cfg.sockets_per_peer > 16)
    return {HCOMM_ERR_INVALID_ARG, "sockets_per_peer must be in [1, 16]"};
  if (cfg.chunk_bytes != 0 && cfg.chunk_bytes < 8)
    return {HCOMM_ERR_INVALID_ARG, "chunk_bytes must be 0 (automatic) or at least 8"};
  if (cfg.actor_threads < 1) return {HCOMM_ERR_INVALID_ARG, "actor_threads must be at least 1"};
  return {};
}

Status first_failure(std::initializer_list<Status> checks) {
  for (const Status& s : checks)
    if (!s.ok()) return s;
  return {};
}

void sanitize_rejected(collectives::Operation& op) {
  if (op.invalid.ok()) return;
  if (!is_valid(op.dtype)) op.dtype = DataType::uint8;
  if (!is_valid(op.redop)) op.redop = ReduceOp::sum;
  op.root = 0;
  op.send_counts.clear();
  op.send_displs.clear();
  op.recv_counts.clear();
  op.recv_displs.clear();
}

}  // namespace hcomm::api
