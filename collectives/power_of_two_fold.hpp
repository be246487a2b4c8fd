// Recursive doubling and halving pair ranks by flipping bits of their number, which needs a
// power-of-two number of ranks. With p the largest power of two <= n and r = n - p, the first 2r
// ranks pair up: the even rank of each pair folds its data into the odd one (rank + 1) and sits
// out until it gets the result back; the p remaining ranks take ids 0..p-1.
#pragma once

namespace hcomm::collectives {

struct PowerOfTwoFold {
  PowerOfTwoFold(int rank, int n) {
    while (p * 2 <= n) {
      p *= 2;
      ++rounds;
    }
    extra = n - p;
    if (rank < 2 * extra) {
      partner = rank % 2 == 0 ? rank + 1 : rank - 1;
      id = rank % 2 == 0 ? -1 : rank / 2;
    } else {
      id = rank - extra;
    }
  }
  /// The rank of participant `i`.
  int rank_of(int i) const { return i < extra ? 2 * i + 1 : i + extra; }

  int p = 1;         ///< participants
  int rounds = 0;    ///< log2(p)
  int extra = 0;     ///< n - p: pairs that fold
  int id = -1;       ///< this rank's participant id; -1 when it sits out
  int partner = -1;  ///< the rank it folds with; -1 for none
};

}  // namespace hcomm::collectives
