// fn_exp_lanes and fn_exp_array (numerics/functions_lanes.h) give fn_exp's bits
// (numerics/functions.h, itself checked against MPFR by test_functions) on every
// input: every binary32 by hand ("[.exhaustive]", both cores, about 2 minutes:
// docs/functions.md), and in the default tier every input of the regions where a
// branch of fn_exp changes
// (overflow, the exponent 128 of the top binade, subnormal results, underflow to
// zero), the special values and a strided sweep over all 2^32 patterns.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "numerics/functions.h"
#include "numerics/functions_lanes.h"
#include "tests/sanitized.h"

using namespace emu;

namespace {

// The first input of bits [lo, hi] (stepping by `step`) where a lane differs from fn_exp, as text; "" if
// none.
std::string first_mismatch(uint64_t lo, uint64_t hi, uint64_t step) {
  float in[8], out[8];
  int n = 0;
  auto flush = [&]() -> std::string {
    v8f32 v{};
    std::memcpy(&v, in, sizeof in);
    v = fn_exp_lanes(v);
    std::memcpy(out, &v, sizeof out);
    for (int i = 0; i < n; ++i)
      if (float_bits(out[i]) != float_bits(fn_exp(in[i])))
        return fmt::format("x 0x{:08x}: lanes 0x{:08x}, fn_exp 0x{:08x}", float_bits(in[i]),
                           float_bits(out[i]), float_bits(fn_exp(in[i])));
    n = 0;
    return "";
  };
  for (uint64_t u = lo; u <= hi; u += step) {
    in[n++] = bits_float(static_cast<uint32_t>(u));
    if (n == 8) {
      std::string m = flush();
      if (!m.empty()) return m;
    }
  }
  // The last partial vector: the unused lanes repeat the first input.
  for (int i = n; i < 8; ++i) in[i] = in[0];
  return n > 0 ? flush() : "";
}

uint32_t bits_of(float x) { return float_bits(x); }

}  // namespace

TEST_CASE("fn_exp_lanes equals fn_exp where each branch of fn_exp changes", "[lanes][exp]") {
  struct Region {
    const char* what;
    float lo, hi;   // same sign
    uint64_t step;  // every input (1), or every step-th of a wide region
  };
  const Region regions[] = {
      {"overflow threshold and the k = 128 binade", 0x1.6p+6f, 0x1.64p+6f, 1},  // 88 .. 89: 2^17 inputs
      {"subnormal results and underflow to +0", -0x1.a2p+6f, -0x1.5cp+6f, 1},   // -104.5 .. -87: 2^21
      {"k = +1 around ln2/2", 0x1.5p-2f, 0x1.7p-2f, 1},                         // 0.33 .. 0.36: 2^20
      {"k = -1 around -ln2/2", -0x1.7p-2f, -0x1.5p-2f, 1},                      //
      {"k = 0 down to the smallest |x|", 0x1p-149f, 0x1p-8f, 257},              // 2^30 inputs: a sample
      {"k = 0 down to the smallest |x|, negative", -0x1p-8f, -0x1p-149f, 257},  //
  };
  for (const Region& r : regions) {
    INFO(r.what);
    uint32_t a = bits_of(r.lo), b = bits_of(r.hi);
    if (a > b) std::swap(a, b);  // negative values: larger magnitude, larger bits
    CHECK(first_mismatch(a, b, r.step * static_cast<uint64_t>(emu::test::sanitized_stride(7))) == "");
  }
}

TEST_CASE("fn_exp_lanes equals fn_exp on special values and a sweep of all patterns", "[lanes][exp]") {
  const float specials[] = {0.0f,
                            -0.0f,
                            bits_float(0x7f800000u),
                            bits_float(0xff800000u),
                            bits_float(0x7fc00000u),
                            bits_float(0xffc00001u),
                            bits_float(0x7f800001u),
                            bits_float(0x7f7fffffu),
                            bits_float(0xff7fffffu),
                            bits_float(0x00000001u),
                            bits_float(0x80000001u),
                            0x1.62e42ep+6f,
                            0x1.62e430p+6f,
                            -0x1.9fe368p+6f,
                            -0x1.9fe36ap+6f,
                            -0x1.9fe366p+6f,
                            1.0f,
                            -1.0f};
  for (float x : specials) {
    INFO("x bits " << bits_of(x));
    CHECK(first_mismatch(bits_of(x), bits_of(x), 1) == "");
  }
  // Every 1031st pattern (odd: the low bits vary), all signs and exponents.
  const uint64_t step = 1031 * static_cast<uint64_t>(emu::test::sanitized_stride(5));
  CHECK(first_mismatch(0, 0xffffffffu, step) == "");
}

TEST_CASE("fn_exp_array: every length, in place, tails in a padded vector", "[lanes][exp]") {
  for (int n = 0; n <= 35; ++n) {
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n), -1.0f);
    for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = -100.0f + 5.7f * static_cast<float>(i);
    fn_exp_array(x.data(), y.data(), n);
    std::vector<float> z = x;
    fn_exp_array(z.data(), z.data(), n);  // in place
    for (int i = 0; i < n; ++i) {
      INFO("n " << n << " i " << i);
      CHECK(bits_of(y[static_cast<size_t>(i)]) == bits_of(fn_exp(x[static_cast<size_t>(i)])));
      CHECK(bits_of(z[static_cast<size_t>(i)]) == bits_of(fn_exp(x[static_cast<size_t>(i)])));
    }
  }
}

TEST_CASE("fn_exp_lanes equals fn_exp on every binary32 input", "[.exhaustive]") {
  // Two threads, each half of the patterns.
  std::string found[2];
  std::thread low([&] { found[0] = first_mismatch(0, 0x7fffffffu, 1); });
  found[1] = first_mismatch(0x80000000u, 0xffffffffu, 1);
  low.join();
  CHECK(found[0] == "");
  CHECK(found[1] == "");
}
