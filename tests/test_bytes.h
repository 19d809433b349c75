// Deterministic byte and word sources of the test data writers (no libc rand,
// no std distributions, so every platform writes the same files).
#pragma once

#include <cstdint>

namespace emu::test {

// Deterministic test bytes (a 64-bit LCG, top byte).
class ByteSource {
 public:
  explicit ByteSource(uint64_t seed) : s_(seed * 2862933555777941757ull + 3037000493ull) {}
  uint8_t next() {
    s_ = s_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint8_t>(s_ >> 56);
  }

 private:
  uint64_t s_;
};

// A 32-bit LCG (Numerical Recipes' constants).
struct Lcg {
  uint32_t state;
  explicit Lcg(uint32_t seed) : state(seed) {}
  uint32_t next() { return state = state * 1664525u + 1013904223u; }
};

}  // namespace emu::test
