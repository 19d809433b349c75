#include <catch2/catch.hpp>

#include "tests/curand_on_host.h"

TEST_CASE("cuRAND's Philox compiled for the host equals emu::PhiloxStream and philox_draw", "[philox]") {
  std::string why;
  bool same = emu::test::curand_host_matches_philox(&why);
  INFO(why);
  CHECK(same);
}
