// CellStoreChooser: which store mode a ShmLink writes ring cells in, from made-up costs; and
// CellWriter: both modes write the same bytes.
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "transport/shm/cell_writer.hpp"

using hcomm::transport::shm::CellStoreChooser;
using hcomm::transport::shm::CellWriter;
using Mode = CellStoreChooser::Mode;

namespace {

/// Runs `cells` full cells through the chooser with fixed costs per mode; counts streamed ones.
int run(CellStoreChooser& c, int cells, uint64_t cached_cost, uint64_t streaming_cost) {
  int streamed = 0;
  for (int i = 0; i < cells; ++i) {
    const Mode m = c.next();
    streamed += m == Mode::streaming ? 1 : 0;
    c.report(m, m == Mode::cached ? cached_cost : streaming_cost);
  }
  return streamed;
}

}  // namespace

TEST_CASE("cell store chooser: tries both, keeps ordinary stores unless streaming is far cheaper") {
  CellStoreChooser c;
  CHECK(c.next() == Mode::cached);
  c.report(Mode::cached, 2000);
  CHECK(c.next() == Mode::streaming);
  c.report(Mode::streaming, 3000);
  // Close cores: ordinary stores cost about what streaming does; stay with them, explore rarely.
  const int n = 100 * static_cast<int>(CellStoreChooser::kExploreEvery);
  CHECK(run(c, n, 2000, 3000) == n / static_cast<int>(CellStoreChooser::kExploreEvery));
  // Streaming only 2x cheaper: the consumer's slower read from memory eats that; still cached.
  CHECK(run(c, n, 6000, 3000) == n / static_cast<int>(CellStoreChooser::kExploreEvery));
  CHECK(c.preferred() == Mode::cached);
}

TEST_CASE("cell store chooser: follows the host moving the cores apart and back") {
  CellStoreChooser c;
  run(c, 1000, 2000, 3000);
  CHECK(c.preferred() == Mode::cached);
  // Far apart: ordinary stores 10x dearer. The average climbs within a few dozen cells (a sample
  // pulls it by an eighth, capped at 4x), and from then on streaming is used.
  run(c, 200, 35000, 3300);
  CHECK(c.preferred() == Mode::streaming);
  const int n = 50 * static_cast<int>(CellStoreChooser::kExploreEvery);
  CHECK(run(c, n, 35000, 3300) == n - n / static_cast<int>(CellStoreChooser::kExploreEvery));
  // Close again: the explored ordinary cells are cheap, and a cheap sample is followed at once.
  run(c, 4 * static_cast<int>(CellStoreChooser::kExploreEvery), 2000, 3300);
  CHECK(c.preferred() == Mode::cached);
}

TEST_CASE("cell store chooser: one preempted copy does not flip the choice") {
  CellStoreChooser c;
  run(c, 100, 2000, 3000);
  c.report(Mode::cached, 10'000'000);  // the thread was descheduled mid-copy
  CHECK(c.preferred() == Mode::cached);
  CHECK(c.average(Mode::cached) < 4000);
}

TEST_CASE("cell writer: every size and mode writes the same bytes") {
  std::vector<std::byte> src(40000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 3);
  CellWriter w;
  for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{4095}, size_t{4096}, size_t{5000},
                   size_t{32768}}) {
    // Enough rounds that both modes are used for full cells.
    for (int round = 0; round < 3 * static_cast<int>(CellStoreChooser::kExploreEvery); ++round) {
      std::vector<std::byte> cell(n + 64, std::byte{0xee});
      w.write(cell.data() + 16, src.data() + 1, n, n == 32768);
      REQUIRE(std::memcmp(cell.data() + 16, src.data() + 1, n) == 0);
      REQUIRE(cell[15] == std::byte{0xee});
      REQUIRE(cell[16 + n] == std::byte{0xee});
    }
  }
  CHECK(w.chooser().average(Mode::cached) > 0);
  CHECK(w.chooser().average(Mode::streaming) > 0);
}
