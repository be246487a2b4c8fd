// HCOMM_ALGO parsing and the cost model's choices.
#include <doctest/doctest.h>

#include "collectives/algorithm_choice.hpp"
#include "collectives/algorithm_selector.hpp"
#include "collectives/algorithms.hpp"

using namespace hcomm;
using namespace hcomm::collectives;

TEST_CASE("HCOMM_ALGO: per operation, bare names, and errors that say what is wrong") {
  auto c = AlgorithmChoice::parse("allreduce=ring; broadcast=tree,reduce_scatter=direct");
  REQUIRE(c.ok());
  CHECK(c->forced(OpKind::allreduce) == Algorithm::ring);
  CHECK(c->forced(OpKind::broadcast) == Algorithm::tree);
  CHECK(c->forced(OpKind::reduce_scatter) == Algorithm::direct);
  CHECK(c->forced(OpKind::allgather) == Algorithm::automatic);

  auto bare = AlgorithmChoice::parse("TREE");
  REQUIRE(bare.ok());
  CHECK(bare->forced(OpKind::allreduce) == Algorithm::tree);
  CHECK(bare->forced(OpKind::reduce) == Algorithm::tree);
  CHECK(bare->forced(OpKind::allgather) == Algorithm::automatic);  // has no tree

  CHECK(AlgorithmChoice::parse("").ok());
  CHECK(AlgorithmChoice::parse("allreduce=auto").ok());
  for (const char* bad :
       {"allreduce=bogus", "gather=ring", "frobnicate=ring", "ring=allreduce", ";;=;"}) {
    auto r = AlgorithmChoice::parse(bad);
    CHECK_FALSE(r.ok());
    if (!r.ok()) {
      CHECK(r.status().code() == HCOMM_ERR_INVALID_ARG);
      CHECK(r.status().message().find("HCOMM_ALGO") != std::string::npos);
    }
  }
}

TEST_CASE("cost model: few rounds for small messages, bandwidth for large ones") {
  LinkCost loopback;  // the built-in figures
  for (int n : {3, 4, 5, 8}) {
    AlgorithmSelector sel(n, loopback, {}, 0);
    auto small = sel.choose(OpKind::allreduce, 8);
    auto large = sel.choose(OpKind::allreduce, 64u << 20);
    CAPTURE(n);
    CHECK(small.algo != Algorithm::ring);
    CHECK(large.algo != Algorithm::rd);
    CHECK(small.algo != large.algo);
    CHECK(large.chunk_bytes >= 16 * 1024);
    CHECK(large.chunk_bytes <= 4 * 1024 * 1024);
    CHECK(large.chunk_bytes % 4096 == 0);
    // The choice is the cheapest prediction among the supported algorithms.
    for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::rd, Algorithm::hd}) {
      CHECK(sel.predict(OpKind::allreduce, a, 8).predicted_us >= small.predicted_us);
      CHECK(sel.predict(OpKind::allreduce, a, 64u << 20).predicted_us >= large.predicted_us);
    }
  }
  // Every kind gets a supported algorithm, at every size, for every world size.
  for (int n = 1; n <= 9; ++n) {
    AlgorithmSelector sel(n, loopback, {}, 0);
    for (int k = 1; k < kNumOpKinds; ++k)
      for (size_t bytes : {size_t{0}, size_t{8}, size_t{1} << 20, size_t{1} << 28}) {
        auto kind = static_cast<OpKind>(k);
        auto c = sel.choose(kind, bytes);
        CHECK((c.algo == Algorithm::automatic || supports(kind, c.algo)));
        CHECK(c.chunk_bytes > 0);
      }
  }
}

TEST_CASE("hier: considered only with several hosts, one of them holding several ranks") {
  LinkCost slow_links;
  slow_links.alpha_us = 1.0;  // cheap messages: the three phases' extra rounds cost little
  for (size_t bytes : {size_t{8}, size_t{1} << 20, size_t{64} << 20}) {
    CAPTURE(bytes);
    // One host (the default), or one rank per host: never hier.
    for (int n : {2, 4, 8}) {
      CHECK(AlgorithmSelector(n, slow_links, {}, 0).choose(OpKind::allreduce, bytes).algo !=
            Algorithm::hier);
      CHECK(AlgorithmSelector(n, slow_links, {}, 0, n, 1).choose(OpKind::allreduce, bytes).algo !=
            Algorithm::hier);
    }
    // Two hosts of four: a candidate, priced as the sum of its three phases.
    AlgorithmSelector two_hosts(8, slow_links, {}, 0, 2, 4);
    const auto hier = two_hosts.predict(OpKind::allreduce, Algorithm::hier, bytes);
    CHECK(hier.predicted_us > 0);
    CHECK(hier.chunk_bytes > 0);
    CHECK(two_hosts.choose(OpKind::allreduce, bytes).predicted_us <= hier.predicted_us);
  }
  // Forced, it is used whatever the layout.
  auto forced = AlgorithmChoice::parse("allreduce=hier");
  REQUIRE(forced.ok());
  CHECK(AlgorithmSelector(4, LinkCost{}, forced.value(), 0).choose(OpKind::allreduce, 8).algo ==
        Algorithm::hier);
}

TEST_CASE("forced algorithms and chunk sizes win over the model") {
  auto forced = AlgorithmChoice::parse("allreduce=ring;allgather=direct");
  REQUIRE(forced.ok());
  AlgorithmSelector sel(4, LinkCost{}, forced.value(), 24);
  CHECK(sel.choose(OpKind::allreduce, 8).algo == Algorithm::ring);
  CHECK(sel.choose(OpKind::allreduce, 8).chunk_bytes == 24);
  CHECK(sel.choose(OpKind::allgatherv, 1 << 20).algo == Algorithm::direct);  // the V form follows
}

TEST_CASE("hier broadcast and allgather(v): supported, forced, and chosen only where they pay") {
  // HCOMM_ALGO: accepted for broadcast and allgather(v), rejected where hier is not implemented.
  for (const char* ok : {"broadcast=hier", "allgather=hier", "allgatherv=hier",
                         "allreduce=hier;broadcast=hier;allgather=hier"}) {
    CAPTURE(ok);
    CHECK(AlgorithmChoice::parse(ok).ok());
  }
  for (const char* bad : {"reduce=hier", "reduce_scatter=hier", "alltoall=hier", "alltoallv=hier",
                          "gather=hier", "scatter=hier", "barrier=hier"}) {
    CAPTURE(bad);
    auto r = AlgorithmChoice::parse(bad);
    CHECK_FALSE(r.ok());
    if (!r.ok()) CHECK(r.status().message().find("has no 'hier'") != std::string::npos);
  }
  auto bare = AlgorithmChoice::parse("hier");  // every operation that has it
  REQUIRE(bare.ok());
  for (OpKind k : {OpKind::allreduce, OpKind::broadcast, OpKind::allgather, OpKind::allgatherv})
    CHECK(bare->forced(k) == Algorithm::hier);
  CHECK(bare->forced(OpKind::reduce) == Algorithm::automatic);

  // Forced, it is used whatever the layout (one host included); allgatherv follows allgather.
  auto forced = AlgorithmChoice::parse("broadcast=hier;allgather=hier");
  REQUIRE(forced.ok());
  for (int hosts : {1, 2}) {
    AlgorithmSelector sel(4, LinkCost{}, forced.value(), 0, hosts, hosts == 1 ? 4 : 2);
    for (OpKind k : {OpKind::broadcast, OpKind::allgather, OpKind::allgatherv})
      for (size_t bytes : {size_t{0}, size_t{8}, size_t{1} << 20}) {
        const auto c = sel.choose(k, bytes);
        CHECK(c.algo == Algorithm::hier);
        CHECK(c.chunk_bytes > 0);
        CHECK(c.predicted_us >= 0);
      }
  }

  LinkCost tcp;        // between hosts: the built-in figures
  LinkCost shm = tcp;  // within a host: ten times cheaper messages and bytes
  shm.alpha_us /= 10;
  shm.beta_us_per_byte /= 10;
  const size_t sizes[] = {8, 4096, 64 * 1024, 1 << 20, 64u << 20};
  for (OpKind k : {OpKind::broadcast, OpKind::allgather, OpKind::allgatherv})
    for (size_t bytes : sizes) {
      CAPTURE(op_kind_name(k));
      CAPTURE(bytes);
      // One host, or one rank per host: never hier, however cheap the local links.
      for (int n : {2, 4, 8}) {
        CHECK(AlgorithmSelector(n, tcp, {}, 0, 1, n, shm).choose(k, bytes).algo != Algorithm::hier);
        CHECK(AlgorithmSelector(n, tcp, {}, 0, n, 1, shm).choose(k, bytes).algo != Algorithm::hier);
        CHECK(AlgorithmSelector(n, tcp, {}, 0).choose(k, bytes).algo != Algorithm::hier);
      }
      // Two hosts of four: the choice is the cheapest prediction, hier included.
      for (const AlgorithmSelector& sel :
           {AlgorithmSelector(8, tcp, {}, 0, 2, 4), AlgorithmSelector(8, tcp, {}, 0, 2, 4, shm)}) {
        const auto choice = sel.choose(k, bytes);
        const auto hier = sel.predict(k, Algorithm::hier, bytes);
        CHECK(hier.predicted_us > 0);
        CHECK(hier.chunk_bytes > 0);
        CHECK(choice.predicted_us <= hier.predicted_us);
        if (choice.algo == Algorithm::hier) CHECK(choice.predicted_us == hier.predicted_us);
      }
    }
  // With one link kind, the allgather's local phases only add to a flat algorithm's bytes: never
  // hier. With links ten times cheaper within hosts, only the leaders' exchange crosses the slow
  // links: hier wins allgathers small and large, and broadcasts up to a few MiB (beyond, the
  // leader's two sends per chunk cost more than the double binary tree's half-buffer trees).
  for (size_t bytes : {size_t{8}, size_t{1} << 20, size_t{64} << 20}) {
    CAPTURE(bytes);
    CHECK(AlgorithmSelector(8, tcp, {}, 0, 2, 4).choose(OpKind::allgather, bytes).algo !=
          Algorithm::hier);
    CHECK(AlgorithmSelector(8, tcp, {}, 0, 2, 4).choose(OpKind::broadcast, bytes).algo !=
          Algorithm::hier);
    CHECK(AlgorithmSelector(8, tcp, {}, 0, 2, 4, shm).choose(OpKind::allgather, bytes).algo ==
          Algorithm::hier);
    if (bytes <= (size_t{1} << 20))
      CHECK(AlgorithmSelector(8, tcp, {}, 0, 2, 4, shm).choose(OpKind::broadcast, bytes).algo ==
            Algorithm::hier);
  }
}
