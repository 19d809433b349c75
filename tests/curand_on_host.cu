// cuRAND's own Philox code, compiled for the host, against emu::PhiloxStream
// and emu::philox_draw. cuRAND's device API is header-only; redefining its
// QUALIFIERS makes curand_init / curand() host functions, so CI checks the
// CPU generator against the real cuRAND source without a GPU. (The GPU run
// of the same comparison is test_philox_cuda.)
#define QUALIFIERS static __forceinline__ __host__ __device__
#include <curand_kernel.h>

#include <cstdio>
#include <string>

#include "numerics/philox.h"
#include "tests/curand_on_host.h"

namespace emu::test {

bool curand_host_matches_philox(std::string* why) {
  // Seeds, subsequences and offsets across the 32-bit boundaries of each word.
  const unsigned long long seeds[] = {0ull, 1ull, 0xdeadbeefull, 0x123456789abcdefull, ~0ull};
  const unsigned long long subsequences[] = {0ull, 1ull, 7ull, 0xffffffffull, 0x100000000ull, ~0ull - 3};
  const unsigned long long offsets[] = {0ull,
                                        1ull,
                                        2ull,
                                        3ull,
                                        4ull,
                                        5ull,
                                        1000001ull,
                                        4ull * 0xffffffffull + 3,
                                        4ull * 0x100000000ull,
                                        (1ull << 62) + 9};
  for (unsigned long long seed : seeds)
    for (unsigned long long sub : subsequences)
      for (unsigned long long offset : offsets) {
        curandStatePhilox4_32_10_t state;
        curand_init(seed, sub, offset, &state);
        emu::PhiloxStream ours;
        ours.init(seed, sub, offset);
        for (int k = 0; k < 9; ++k) {
          unsigned int expected = curand(&state);
          unsigned int got = ours.next();
          unsigned int direct = k == 0 ? emu::philox_draw(seed, sub, offset) : got;
          if (got != expected || direct != expected) {
            char buf[256];
            std::snprintf(buf, sizeof buf,
                          "seed %llx subsequence %llx offset %llx draw %d: curand %08x, PhiloxStream %08x, "
                          "philox_draw %08x",
                          seed, sub, offset, k, expected, got, direct);
            *why = buf;
            return false;
          }
        }
      }
  return true;
}

}  // namespace emu::test
