// emu::mac_reduce (numerics/mac.h) against the reference reduction
// emu::ref::ref_dot, which is docs/contract.md section 4 written out literally
// with exact rationals. Random K in 0..300, zeros (and -0) sprinkled in, with
// and without bias and chunking, every combination of the product formats
// (exact, e5m10, bf16) and accumulators (e5m10, fp32, fp64, int32, fixed32_16,
// posit16_1, posit32_2), a few rounding modes of the accumulator, several
// output and outer-accumulator formats. No stochastic rounding (draw = 0).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "numerics/format_spec.h"
#include "numerics/mac.h"
#include "tests/reference/compare.h"
#include "tests/reference/reference.h"
#include "tests/sanitized.h"

using emu::Format;
using emu::MacPolicy;
using emu::parse_format;
using emu::ref::Mismatches;

namespace {

const char* const kMuls[] = {"exact", "e5m10", "bf16"};
const char* const kAccs[] = {"e5m10", "fp32", "fp64", "int32", "fixed32_16", "posit16_1", "posit32_2"};
const char* const kAccModes[] = {"", ":rtz", ":rdn", ":rna"};
const char* const kOuts[] = {"fp32", "bf16", "fp16", "fp8_e4m3"};
const char* const kOuters[] = {"fp32", "fp64", "e5m10"};

// Operand vectors of one of several shapes.
struct Operands {
  std::vector<float> a, b;
  float bias = 0;
};

Operands make_operands(std::mt19937_64& rng, int64_t K) {
  Operands o;
  o.a.resize(K);
  o.b.resize(K);
  const int shape = static_cast<int>(rng() % 5);
  auto number = [&](int lo, int hi) {
    float m = 1.0f + static_cast<float>(rng() & 0x7fffff) * 0x1p-23f;
    int e = lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
    float x = std::ldexp(m, e);
    return (rng() & 1) ? -x : x;
  };
  auto draw = [&]() -> float {
    switch (shape) {
      case 0:
        return static_cast<float>(static_cast<int>(rng() % 17) - 8);  // small integers
      case 1:
        return number(-6, 6);  // moderate
      case 2:
        return number(-40, 40);  // wide: overflow, underflow
      case 3:
        return std::ldexp(static_cast<float>(static_cast<int>(rng() % 2049) - 1024), -8);  // short
      default:
        return number(-2, 2);
    }
  };
  for (int64_t k = 0; k < K; ++k) {
    o.a[k] = draw();
    o.b[k] = draw();
    uint64_t z = rng() % 16;
    if (z == 0) o.a[k] = 0.0f;
    if (z == 1) o.b[k] = -0.0f;
    if (z == 2 && k > 0) {  // cancel the previous term exactly
      o.a[k] = -o.a[k - 1];
      o.b[k] = o.b[k - 1];
    }
  }
  if (K > 0 && rng() % 25 == 0) {  // a special value, sometimes against a zero (skipped)
    const float specials[] = {INFINITY, -INFINITY, NAN};
    o.a[rng() % K] = specials[rng() % 3];
  }
  o.bias = draw();
  return o;
}

}  // namespace

TEST_CASE("mac_reduce matches the literal reduction of docs/contract.md section 4", "[reference]") {
  std::mt19937_64 rng(0x3ac0ffee);
  Mismatches m;
  auto no_draw = [](uint64_t) { return 0u; };
  int dots = 0;
  // 300 rounds of every mul x acc pair; 75 in a sanitizer build (tests/sanitized.h).
  const int rounds = static_cast<int>(emu::test::sanitized_size(300, 4));
  for (int round = 0; round < rounds; ++round) {
    for (const char* mul : kMuls) {
      for (const char* acc : kAccs) {
        MacPolicy p;
        p.mul_exact = std::string(mul) == "exact";
        p.mul = parse_format(p.mul_exact ? "fp32" : mul);
        p.acc = parse_format(std::string(acc) + kAccModes[rng() % 4]);
        p.out = parse_format(kOuts[rng() % 4]);
        p.acc_outer = parse_format(kOuters[rng() % 3]);
        const int64_t K = static_cast<int64_t>(rng() % 301);
        p.chunk = (rng() & 1) ? 0 : 1 + static_cast<int>(rng() % 40);
        const bool with_bias = rng() & 1;
        Operands o = make_operands(rng, K);
        const float* bias = with_bias ? &o.bias : nullptr;
        const double got = emu::mac_reduce(p, o.a.data(), o.b.data(), K, bias, no_draw);
        const double want = emu::ref::ref_dot(p.mul_exact, p.mul, p.acc, p.out, p.chunk, p.acc_outer,
                                              o.a.data(), o.b.data(), K, bias);
        ++dots;
        m.check(p.acc, got, want, [&] {
          std::string s = std::string("dot: mul ") + mul + ", out " + emu::format_name(p.out) +
                          ", acc_outer " + emu::format_name(p.acc_outer) + ", chunk " +
                          std::to_string(p.chunk) + ", K " + std::to_string(K) +
                          (bias ? ", bias " + emu::ref::show(*bias) : ", no bias") + ", (a, b) =";
          for (int64_t k = 0; k < K && k < 12; ++k)
            s += " (" + emu::ref::show(o.a[k]) + ", " + emu::ref::show(o.b[k]) + ")";
          return s + (K > 12 ? " ..." : "");
        });
      }
    }
  }
  std::printf("mac: %d reductions\n", dots);
  INFO(m.report());
  CHECK(m.count() == 0);
}

TEST_CASE("mac_reduce: edge cases", "[reference]") {
  Mismatches m;
  auto no_draw = [](uint64_t) { return 0u; };
  struct Case {
    const char* acc;
    const char* out;
    int chunk;
    std::vector<float> a;  // b is all ones
    bool bias;
    float bias_value;
  };
  const Case cases[] = {
      {"fp32", "fp32", 0, {}, false, 0},                                 // empty: +0
      {"fp32:rdn", "fp32", 0, {1, -1}, false, 0},                        // exact cancellation under rdn: -0
      {"fp32", "fp32", 0, {1, -1}, false, 0},                            // +0
      {"fp32:rdn", "fp32", 2, {1, -1, 2, -2}, true, -0.0f},              // chunked zeros and a -0 bias
      {"fp32", "fp32", 0, {-0.0f, 0.0f}, true, -0.0f},                   // all skipped, +0 + -0
      {"e5m10", "fp32", 0, {300, 300, -300}, false, 0},                  // overflow to Inf, then Inf - x
      {"e5m10:sat", "fp32", 0, {300, 300, -300}, false, 0},              // saturating accumulator
      {"posit16_1", "fp32", 0, {1e-9f, 1e-9f}, false, 0},                // below minpos: minpos
      {"int32", "fp32", 3, {0.4f, 0.4f, 0.4f, 0.6f, 0.6f}, true, 0.5f},  // integer accumulation
      {"fixed32_16", "bf16", 0, {1e5f, 1e5f}, false, 0},                 // fixed saturates
      {"posit32_2", "fp32", 0, {1e30f, -1e30f, 3}, false, 0},
  };
  for (const Case& c : cases) {
    MacPolicy p;
    p.mul_exact = true;
    p.mul = parse_format("fp32");
    p.acc = parse_format(c.acc);
    p.out = parse_format(c.out);
    p.acc_outer = parse_format("fp32");
    p.chunk = c.chunk;
    std::vector<float> ones(c.a.size(), 1.0f);
    const float* bias = c.bias ? &c.bias_value : nullptr;
    const int64_t K = static_cast<int64_t>(c.a.size());
    double got = emu::mac_reduce(p, c.a.data(), ones.data(), K, bias, no_draw);
    double want =
        emu::ref::ref_dot(true, p.mul, p.acc, p.out, p.chunk, p.acc_outer, c.a.data(), ones.data(), K, bias);
    m.check(p.acc, got, want,
            [&] { return std::string("edge case, out ") + c.out + ", chunk " + std::to_string(c.chunk); });
  }
  // Zero operands are skipped, so Inf * 0 and NaN * 0 leave no NaN behind; Inf * 2 does.
  const float a[] = {INFINITY, NAN, 2.0f, -0.0f};
  const float b0[] = {0.0f, -0.0f, 3.0f, INFINITY};
  const float b1[] = {0.0f, -0.0f, 3.0f, 1.0f};
  const float b2[] = {2.0f, 0.0f, 3.0f, 1.0f};
  for (const float* b : {b0, b1, b2}) {
    MacPolicy p;
    p.mul_exact = false;
    p.mul = parse_format("bf16");
    p.acc = parse_format("fp32");
    p.out = parse_format("fp16");
    p.acc_outer = parse_format("fp32");
    double got = emu::mac_reduce(p, a, b, 4, nullptr, no_draw);
    double want = emu::ref::ref_dot(false, p.mul, p.acc, p.out, 0, p.acc_outer, a, b, 4, nullptr);
    m.check(p.acc, got, want, [&] { return std::string("skipped zero operands against Inf/NaN"); });
  }
  CHECK(emu::ref::ref_dot(false, parse_format("bf16"), parse_format("fp32"), parse_format("fp16"), 0,
                          parse_format("fp32"), a, b1, 4, nullptr) == 6.0);
  INFO(m.report());
  CHECK(m.count() == 0);
}
