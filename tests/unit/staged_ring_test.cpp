// The staged allreduce's bookkeeping: where its steps lie in a staging ring, and how stage tags
// compare across the wrap of the slot operation number. (The exchange itself runs in the
// collective matrix, bad_input and shm_robustness, between processes.)
#include <doctest/doctest.h>

#include <cstdint>

#include "collectives/staged_allreduce.hpp"
#include "transport/shm/slot_board.hpp"

using hcomm::collectives::stage_position;
using hcomm::transport::shm::stage_reached;
using hcomm::transport::shm::stage_tag;

TEST_CASE("staging ring: steps follow each other and never cross the ring's end") {
  constexpr uint64_t kRing = 2 << 20;
  for (uint64_t step_bytes :
       {uint64_t{64}, uint64_t{24576}, uint64_t{524288}, uint64_t{699392}, kRing}) {
    for (uint64_t base : {uint64_t{0}, uint64_t{4096}, kRing - 64, 3 * kRing + 1000000}) {
      CAPTURE(step_bytes);
      CAPTURE(base);
      // The rule spelled out step by step, against the closed form.
      uint64_t at = base;
      for (uint64_t step = 0; step < 40; ++step) {
        if (at % kRing + step_bytes > kRing) at = (at / kRing + 1) * kRing;
        CHECK(stage_position(base, step_bytes, step, kRing) == at);
        CHECK(at % kRing + step_bytes <= kRing);
        CHECK(at >= base);
        at += step_bytes;
      }
    }
  }
}

TEST_CASE("stage tags: later steps and later operations compare as reached, across the wrap") {
  CHECK(stage_reached(stage_tag(7, 3), stage_tag(7, 3)));
  CHECK(stage_reached(stage_tag(7, 4), stage_tag(7, 3)));
  CHECK_FALSE(stage_reached(stage_tag(7, 2), stage_tag(7, 3)));
  CHECK(stage_reached(stage_tag(8, 0), stage_tag(7, UINT32_MAX)));
  CHECK_FALSE(stage_reached(stage_tag(6, UINT32_MAX), stage_tag(7, 1)));
  // Slot operation numbers past 2^32 wrap the tag's high half; neighbours still compare right.
  const uint64_t big = (uint64_t{1} << 32) - 1;
  CHECK(stage_reached(stage_tag(big + 1, 0), stage_tag(big, 5)));
  CHECK_FALSE(stage_reached(stage_tag(big, 5), stage_tag(big + 1, 0)));
  CHECK(stage_reached(stage_tag(big + 1, 1), stage_tag(big + 1, 1)));
}
