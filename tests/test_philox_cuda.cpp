// numerics/philox.h against cuRAND on the GPU (backends/cuda/philox_check.cu).
// Without a device it prints the skip marker that CTest's
// SKIP_REGULAR_EXPRESSION turns into a skipped test.
#include <catch2/catch.hpp>
#include <iostream>
#include <string>

#include "backends/cuda/philox_check.h"

TEST_CASE("Philox on CUDA matches curand_init and curand word for word", "[philox][cuda]") {
  if (emu::cuda_device_count() == 0) {
    std::cout << "SKIP: no CUDA device" << std::endl;
    return;
  }
  std::string why;
  const bool ok = emu::cuda_philox_matches_curand(&why);
  INFO(why);
  REQUIRE(ok);
}
