#include "collectives/algorithm_choice.hpp"

#include <cctype>

#include "collectives/algorithms.hpp"

namespace hcomm::collectives {
namespace {

std::string normalized(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c)) && c != '_' && c != '-')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Status bad(const std::string& text, const std::string& why) {
  std::string names;
  for (const std::string& name : algorithm_names()) names += name + ", ";
  return {HCOMM_ERR_INVALID_ARG, "HCOMM_ALGO='" + text + "': " + why +
                                     " (expected e.g. 'allreduce=ring;broadcast=tree' or one of " +
                                     names + algorithm_name(Algorithm::automatic) + ")"};
}

}  // namespace

std::vector<std::string> algorithm_names(OpKind kind) {
  std::vector<std::string> out;
  for (int a = 0; a < kNumAlgorithms; ++a) {
    const auto algo = static_cast<Algorithm>(a);
    if (algo != Algorithm::automatic && supports(kind, algo))
      out.emplace_back(algorithm_name(algo));
  }
  return out;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> out;
  for (int a = 0; a < kNumAlgorithms; ++a) {
    const auto algo = static_cast<Algorithm>(a);
    for (int k = 1; k < kNumOpKinds && algo != Algorithm::automatic; ++k) {
      if (supports(static_cast<OpKind>(k), algo)) {
        out.emplace_back(algorithm_name(algo));
        break;
      }
    }
  }
  return out;
}

bool parse_op_kind(const std::string& name, OpKind& out) {
  const std::string n = normalized(name);
  for (int k = 1; k < kNumOpKinds; ++k) {
    if (normalized(op_kind_name(static_cast<OpKind>(k))) == n) {
      out = static_cast<OpKind>(k);
      return true;
    }
  }
  return false;
}

Expected<AlgorithmChoice> AlgorithmChoice::parse(const std::string& text) {
  AlgorithmChoice choice;
  size_t begin = 0;
  bool any = false;
  while (begin <= text.size()) {
    size_t end = text.find_first_of(";,", begin);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(begin, end - begin);
    begin = end + 1;
    if (normalized(item).empty()) continue;
    any = true;
    const size_t eq = item.find('=');
    Algorithm algo;
    const std::string algo_name = normalized(eq == std::string::npos ? item : item.substr(eq + 1));
    if (!parse_algorithm(algo_name.c_str(), algo))
      return bad(text, "unknown algorithm '" + algo_name + "'");
    if (eq == std::string::npos) {  // a bare name: every operation that has it
      bool used = false;
      for (int k = 1; k < kNumOpKinds; ++k) {
        if (algo != Algorithm::automatic && supports(static_cast<OpKind>(k), algo)) {
          choice.forced_[static_cast<size_t>(k)] = algo;
          used = true;
        }
      }
      if (!used && algo != Algorithm::automatic)
        return bad(text, std::string("no operation implements '") + algorithm_name(algo) + "'");
      continue;
    }
    OpKind kind;
    if (!parse_op_kind(item.substr(0, eq), kind))
      return bad(text, "unknown operation '" + item.substr(0, eq) + "'");
    if (!supports(kind, algo))
      return bad(text, std::string(op_kind_name(kind)) + " has no '" + algorithm_name(algo) +
                           "' algorithm");
    choice.forced_[static_cast<size_t>(kind)] = algo;
  }
  if (!any && !normalized(text).empty()) return bad(text, "nothing to parse");
  return choice;
}

}  // namespace hcomm::collectives
