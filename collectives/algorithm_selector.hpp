// Automatic algorithm selection: a cost model in Hockney's terms — alpha (per message), beta (per
// byte on the wire) and gamma (per byte reduced) — predicts each algorithm's time for an
// operation, message size and world size; the cheapest wins, and pipelined algorithms get the
// chunk size that minimises their predicted time. The parameters come from a measurement at
// communicator creation (LinkCost), broadcast from rank 0, so every rank chooses alike: a
// choice that differed between ranks would be a mismatch, not a slowdown.
//
// HCOMM_ALGO (AlgorithmChoice) overrides the choice, HCOMM_CHUNK_SIZE the chunk.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "collectives/algorithm_choice.hpp"
#include "collectives/operation.hpp"

namespace hcomm::collectives {

/// Hockney parameters of one link kind, in microseconds.
struct LinkCost {
  double alpha_us = 15.0;           ///< one message's latency, including both ends' software
  double beta_us_per_byte = 4e-4;   ///< wire + copy time per byte (1 / bandwidth)
  double gamma_us_per_byte = 2e-4;  ///< reduction time per byte of input
  std::string to_string() const;
};

class AlgorithmSelector {
 public:
  struct Choice {
    Algorithm algo = Algorithm::automatic;
    size_t chunk_bytes = 0;
    double predicted_us = 0;
  };

  /// `hosts` and `largest_host` (ranks on the most populated host; 0: world_size) describe the
  /// host layout for the hierarchical algorithms; the defaults mean one host. `local_cost` prices
  /// the links within a host in their phases (unset: `cost`, the one link kind measured).
  AlgorithmSelector(int world_size, LinkCost cost, AlgorithmChoice forced, size_t chunk_override,
                    int hosts = 1, int largest_host = 0,
                    std::optional<LinkCost> local_cost = std::nullopt);

  /// The algorithm and chunk for `kind` moving `bytes` (the size every rank agrees on, as in
  /// Operation::agreed_bytes(); for the V forms the total).
  Choice choose(OpKind kind, size_t bytes) const;
  /// The model's time for one candidate; the chunk is chosen as choose() would.
  Choice predict(OpKind kind, Algorithm algo, size_t bytes) const;
  const LinkCost& cost() const { return cost_; }
  const LinkCost& local_cost() const { return local_; }

 private:
  size_t best_chunk(double per_chunk_us_fixed, double per_byte_us, double stages,
                    double bytes) const;

  int n_;
  int hosts_, largest_host_;
  LinkCost cost_, local_;
  AlgorithmChoice forced_;
  size_t chunk_override_;
};

}  // namespace hcomm::collectives
