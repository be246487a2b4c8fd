// Ring order from hosts and the topology file.
#include <doctest/doctest.h>

#include "topology/ring_order.hpp"

using hcomm::topology::ring_order;
using hcomm::topology::TopologyFile;

TEST_CASE("ring order: ranks of a host together, hosts of a switch together") {
  // Already grouped: the identity.
  CHECK(ring_order({"a", "a", "b", "b"}, {"a", "a", "b", "b"}, nullptr) ==
        std::vector<int>{0, 1, 2, 3});
  // Interleaved hosts: two crossings instead of four.
  CHECK(ring_order({"a", "b", "a", "b"}, {"a", "b", "a", "b"}, nullptr) ==
        std::vector<int>{0, 2, 1, 3});
  CHECK(ring_order({"x"}, {"x"}, nullptr) == std::vector<int>{0});

  auto file = TopologyFile::parse(
      "host a switch s1 rack r1\nhost b switch s2 rack r2\nhost c switch s1 rack r1\n"
      "host d switch s2\n",
      "test");
  REQUIRE(file.ok());
  // Hosts a and c share switch s1, b and d share s2: a, c, then b, d.
  CHECK(ring_order({"A", "B", "C", "D"}, {"a", "b", "c", "d"}, &file.value()) ==
        std::vector<int>{0, 2, 1, 3});
  // Hosts are found by id too; an unlisted host stands alone, ordered by its lowest rank.
  CHECK(ring_order({"c", "z", "a", "c"}, {"?", "?", "?", "?"}, &file.value()) ==
        std::vector<int>{0, 3, 2, 1});
}
