#include "algorithm_names.hpp"

#include <algorithm>

#include "collectives/algorithm_choice.hpp"
#include "collectives/operation.hpp"
#include "usage.hpp"

namespace hcomm::tools {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::vector<std::string> algorithms_of(const std::string& op) {
  collectives::OpKind kind;
  if (!collectives::parse_op_kind(op, kind)) return {};
  return collectives::algorithm_names(kind);
}

}  // namespace

std::vector<std::string> forcible_algorithms(const std::string& op) {
  std::vector<std::string> out = algorithms_of(op);
  out.emplace_back(collectives::algorithm_name(collectives::Algorithm::automatic));
  return out;
}

std::string algorithm_help(const std::vector<std::string>& ops, size_t indent) {
  std::string out;
  for (const std::string& op : ops) {
    const std::vector<std::string> names = algorithms_of(op);
    if (!names.empty()) out += std::string(indent, ' ') + op + ": " + joined(names) + "\n";
  }
  return out;
}

void check_algorithm(const char* flag, const std::string& op, const std::string& algo) {
  const std::vector<std::string> names = forcible_algorithms(op);
  if (std::find(names.begin(), names.end(), algo) != names.end()) return;
  usage_error(std::string(flag) + ": " + op + " has no algorithm '" + algo + "' (" + joined(names) +
              ")");
}

}  // namespace hcomm::tools
