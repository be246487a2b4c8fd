// What HCOMM_ALGO / Config::algo forces: per operation kind, an algorithm or "automatic".
//
// Syntax: "allreduce=ring;broadcast=tree" (',' also separates), or one bare name that applies to
// every operation supporting it ("tree"). Parsing rejects unknown operations, unknown algorithms
// and pairs the library does not implement, so a typo fails at communicator creation rather than
// silently running the default.
#pragma once

#include <array>
#include <string>

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

}  // namespace hcomm::collectives
