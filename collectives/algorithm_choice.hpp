// What HCOMM_ALGO / Config::algo forces: per operation kind, an algorithm or "automatic".
//
// Syntax: "allreduce=ring;broadcast=tree" (',' also separates), or one bare name that applies to
// every operation supporting it ("tree"). Parsing rejects unknown operations, unknown algorithms
// and pairs the library does not implement, so a typo fails at communicator creation rather than
// silently running the default.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "collectives/operation.hpp"
#include "hcomm/status.hpp"

namespace hcomm::collectives {

class AlgorithmChoice {
 public:
  static Expected<AlgorithmChoice> parse(const std::string& text);
  /// The forced algorithm for `kind`, or Algorithm::automatic.
  Algorithm forced(OpKind kind) const { return forced_[static_cast<size_t>(kind)]; }

 private:
  std::array<Algorithm, kNumOpKinds> forced_{};
};

/// "allreduce" → OpKind::allreduce (also "reducescatter", "all_gather"-style spellings).
bool parse_op_kind(const std::string& name, OpKind& out);

/// The algorithms `kind` can be forced to, by name ("ring", "tree", ...), in the order of
/// Algorithm; "auto", which every operation takes, is not among them. Empty for the operations
/// with a single algorithm (barrier, send, recv). The one list tools and tests take them from.
std::vector<std::string> algorithm_names(OpKind kind);

/// Every algorithm some operation can be forced to, each once, in the order of Algorithm.
std::vector<std::string> algorithm_names();

/// What Communicator::algorithm_for() names, besides the algorithms, on a one-host communicator
/// for what no forced algorithm replaces: small collectives on the slot board, and larger
/// allreduces through its staging rings (see slot_collectives.hpp).
constexpr char kSlotBoardName[] = "slot";
constexpr char kStagedName[] = "staged";

}  // namespace hcomm::collectives
