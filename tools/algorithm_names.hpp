// The algorithms a tool's -a may force, by operation, as the library names them
// (collectives::algorithm_names): for the tools' help, their checks and hcomm-info's list.
#pragma once

#include <string>
#include <vector>

namespace hcomm::tools {

/// What -a may name for operation `op`: the algorithms of its kind, then "auto" (the library's
/// choice). Just "auto" for an operation with a single algorithm (barrier) or that is none of
/// the library's operation kinds (hcomm-bench's sendrecv).
std::vector<std::string> forcible_algorithms(const std::string& op);

/// Help lines, one per operation of `ops` that has algorithms to force: `indent` spaces, then
/// "allreduce: ring, tree, rd, hd, hier".
std::string algorithm_help(const std::vector<std::string>& ops, size_t indent);

/// Ends in usage_error() unless `algo` is one of forcible_algorithms(op); `flag` names the option.
void check_algorithm(const char* flag, const std::string& op, const std::string& algo);

}  // namespace hcomm::tools
