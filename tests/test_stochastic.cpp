// Stochastic rounding (:sr, docs/contract.md section 2.4): exact decisions against the
// independent reference, and statistics of Philox-driven SR.
//
// The definition: cut x at the target's last bit, take the 32 bits right below
// the cut as below32 (for posits: bits of the encoding), round away from zero
// exactly when below32 + rand >= 2^32. So for every x there is one threshold
// draw 2^32 - below32 where the decision flips; the exact tests put the draw on
// both sides of it, for binary32/binary64 inputs and for exact results of
// add, div and sqrt (quotients and irrational roots keep only a sticky bit
// beyond their computed bits, which must not move below32).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tests/reference/compare.h"
#include "tests/reference/reference.h"
#include "tests/sanitized.h"

using emu::Format;
using emu::parse_format;
using emu::ref::describe;
using emu::ref::Mismatches;
using emu::ref::Rational;
using emu::ref::RefExact;
using emu::ref::show_code;

namespace {

const char* const kSrFormats[] = {
    "fp16:sr",     "bf16:sr",      "fp8_e4m3:sr",       "e5m2:sr",       "fp8_e4m3:sat:sr", "fp16:nosub:sr",
    "e8m12:sr",    "fp4_e2m1:sr",  "posit8_0:sr",       "posit8_2:sr",   "posit16_1:sr",    "posit32_2:sr",
    "fixed8_4:sr", "fixed16_8:sr", "fixed16_8:wrap:sr", "fixed32_16:sr", "int32:sr",        "e11m52:sr"};

// A random double whose magnitude is spread over f's range (and a bit beyond).
double random_value(std::mt19937_64& rng, const Format& f) {
  int lo = static_cast<int>(std::floor(std::log2(f.min_positive))) - 3;
  int hi = static_cast<int>(std::floor(std::log2(f.max_finite))) + 2;
  int e = lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
  double m = 1.0 + static_cast<double>(rng() >> 12) * 0x1p-52;
  double x = std::ldexp(m, e);
  return (rng() & 1) ? -x : x;
}

// The draws around the decision threshold of an exact value (plus the ends).
std::vector<uint32_t> threshold_draws(const Format& f, const RefExact& x) {
  std::vector<uint32_t> draws = {0u, 1u, 0xffffffffu};
  if (x.kind != RefExact::Kind::Finite) return draws;
  const uint32_t j = emu::ref::ref_below32(f, x.magnitude, x.tail);
  const uint32_t t = static_cast<uint32_t>((1ull << 32) - j);  // rounds away from here up (j > 0)
  draws.push_back(t);
  draws.push_back(t - 1);
  draws.push_back(t + 1);
  return draws;
}

// The neighbours lo <= |x| < hi (magnitudes) of a nonzero x that f does not hold.
void neighbours(const Format& f, double x, double* lo, double* hi) {
  Format down = f, up = f;
  down.rounding = emu::Rounding::TowardZero;
  up.rounding = x > 0 ? emu::Rounding::Up : emu::Rounding::Down;
  *lo = std::fabs(emu::ref::ref_quantize(down, x));
  *hi = std::fabs(emu::ref::ref_quantize(up, x));
}

// Exact results of add, div and sqrt on random values of f, each rounded with
// the draws around its threshold.
void check_arithmetic(const Format& f, std::mt19937_64& rng, int count, bool sums, bool quotients_and_roots,
                      Mismatches& m) {
  for (int i = 0; i < count; ++i) {
    const double a = emu::ref::ref_quantize(f, random_value(rng, f));
    const double b = emu::ref::ref_quantize(f, random_value(rng, f));
    if (sums) {
      const RefExact sum = emu::ref::exact_sum(RefExact::of(a), RefExact::of(b), /*round_down=*/false);
      for (uint32_t rand : threshold_draws(f, sum))
        m.check(f, emu::format_add(f, a, b, rand), emu::ref::ref_add(f, a, b, rand), [&] {
          return describe("add", {a, b}, (" rand " + show_code(rand)).c_str());
        });
    }
    if (quotients_and_roots) {
      const RefExact quotient = emu::ref::exact_quotient(RefExact::of(a), RefExact::of(b));
      for (uint32_t rand : threshold_draws(f, quotient))
        m.check(f, emu::format_div(f, a, b, rand), emu::ref::ref_div(f, a, b, rand), [&] {
          return describe("div", {a, b}, (" rand " + show_code(rand)).c_str());
        });
      const double r = std::fabs(a);
      const RefExact root = emu::ref::exact_square_root(RefExact::of(r));
      for (uint32_t rand : threshold_draws(f, root))
        m.check(f, emu::format_sqrt(f, r, rand), emu::ref::ref_sqrt(f, r, rand),
                [&] { return describe("sqrt", {r}, (" rand " + show_code(rand)).c_str()); });
    }
  }
}

}  // namespace

TEST_CASE("SR decisions at and around the threshold draw match the reference", "[reference]") {
  std::mt19937_64 rng(0x5eed5eed);
  Mismatches m;
  for (const char* spec : kSrFormats) {
    const Format f = parse_format(spec);
    // Values: random doubles, their binary32 roundings, and x = lo + (j / 2^32 + tiny) * unit
    // for IEEE-like formats (exactly one draw flips them; j = 0 never rounds away).
    // 1500 values per format; 375 in a sanitizer build (tests/sanitized.h).
    const int values = static_cast<int>(emu::test::sanitized_size(1500, 4));
    for (int i = 0; i < values; ++i) {
      double x = random_value(rng, f);
      if (i % 3 == 1) x = static_cast<double>(static_cast<float>(x));
      if (i % 3 == 2 && f.family == emu::Family::Ieee && f.man_bits <= 10) {
        double lo, hi;
        neighbours(f, x, &lo, &hi);
        if (hi > lo && std::isfinite(hi)) {
          uint64_t j = (i % 7 == 0) ? 0 : (i % 7 == 1) ? 1 : (rng() & 0xffffffffu);
          double frac = static_cast<double>(j) * 0x1p-32 + ((i & 8) ? 0x1p-40 : 0.0);
          x = std::copysign(lo + (hi - lo) * frac, x);
        }
      }
      const RefExact ex = RefExact::of(x);
      for (uint32_t rand : threshold_draws(f, ex)) {
        m.check(f, emu::round_value(f, x, rand), emu::ref::ref_quantize(f, x, rand),
                [&] { return describe("round", {x}, (" rand " + show_code(rand)).c_str()); });
      }
    }
    // Exact results of arithmetic on values of f (as many).
    check_arithmetic(f, rng, values, true, true, m);
  }
  std::printf("SR exact: %llu decisions\n", static_cast<unsigned long long>(m.cases()));
  INFO(m.report());
  CHECK(m.count() == 0);
}

// Quotients and roots keep enough bits for wide accumulators under :sr (p + 32
// bits below the cut): an earlier version kept 74 / 63 bits and got these wrong.
//   format_sqrt(fp64:sr, 2.0, 0x6f74d04f): sqrt 2 = 0x1.6a09e667f3bcc|908b2fb1..., 0x908b2fb1 + 0x6f74d04f =
//   2^32 format_div(fp64:sr, 1.0, 3.0, 0xaaaaaaab): 1/3 = 0x1.5555555555555|55555555...p-2, 0x55555555 +
//   0xaaaaaaab = 2^32 format_sqrt(e11m40:sr, 2.0, 0x4336f74e) = 0x1.6a09e667f4p+0
TEST_CASE("SR of quotients and roots in formats with more than 31 significand bits", "[reference]") {
  const Format fp64 = parse_format("fp64:sr"), e11m40 = parse_format("e11m40:sr");
  CHECK(emu::ref::same_value(emu::format_sqrt(fp64, 2.0, 0x6f74d04fu), 0x1.6a09e667f3bcdp+0));
  CHECK(emu::ref::same_value(emu::format_div(fp64, 1.0, 3.0, 0xaaaaaaabu), 0x1.5555555555556p-2));
  CHECK(emu::ref::same_value(emu::format_sqrt(e11m40, 2.0, 0x4336f74eu), 0x1.6a09e667f4p+0));
  // The reference agrees with the hand-derived values above.
  CHECK(emu::ref::same_value(emu::ref::ref_sqrt(fp64, 2.0, 0x6f74d04fu), 0x1.6a09e667f3bcdp+0));
  CHECK(emu::ref::same_value(emu::ref::ref_div(fp64, 1.0, 3.0, 0xaaaaaaabu), 0x1.5555555555556p-2));
  std::mt19937_64 rng(0x5eed5eee);
  Mismatches m;
  for (const char* spec : {"fp64:sr", "e11m40:sr", "e11m32:sr"})
    check_arithmetic(parse_format(spec), rng, 1500, false, true, m);
  INFO(m.report());
  CHECK(m.count() == 0);
}

TEST_CASE("the reference's SR quantity: linear in the value for IEEE, on the encoding for posits",
          "[reference]") {
  // The reference itself, on hand-checked values.
  const Format fp16 = parse_format("fp16:sr");
  // 1 + 2^-10 * (1/4 + 2^-40): unit 2^-10, a quarter of the way up.
  CHECK(emu::ref::ref_below32(fp16, Rational::from_double(1.0 + 0x1p-12 + 0x1p-50), false) == 0x40000000u);
  // posit8_2: between 2^20 (code 0x7e) and 2^24 (0x7f) the encoding's next
  // bits are the exponent's low bit then nothing: 2^22 is halfway, 2^23 is
  // 3/4 (exponent 11 -> bits 1 and then 1 of the wider posit) of the way.
  const Format p82 = parse_format("posit8_2:sr");
  CHECK(emu::ref::ref_below32(p82, Rational::from_double(0x1p22), false) == 0x80000000u);
  CHECK(emu::ref::ref_below32(p82, Rational::from_double(0x1p23), false) == 0xc0000000u);
  CHECK(emu::ref::ref_quantize(p82, 0x1p23, 0x3fffffffu) == 0x1p20);
  CHECK(emu::ref::ref_quantize(p82, 0x1p23, 0x40000000u) == 0x1p24);
  CHECK(emu::round_value(p82, 0x1p23, 0x3fffffffu) == 0x1p20);
  CHECK(emu::round_value(p82, 0x1p23, 0x40000000u) == 0x1p24);
}

TEST_CASE("SR with Philox draws is unbiased: mean within 5 standard errors", "[reference]") {
  // SR(x) is the upper neighbour hi with probability p = below32 / 2^32, else the lower one
  // lo; below32 / 2^32 is (|x| - lo) / (hi - lo) truncated to 32 bits (linear in the value
  // for IEEE-like and fixed point, and for posits with es = 0, where no exponent bits are
  // ever cut). So over N independent uniform draws, mean(SR(x)) - x has expectation within
  // (hi - lo) 2^-32 of 0 and standard deviation (hi - lo) sqrt(p (1 - p) / N). We require
  //   |mean - x| <= 5 (hi - lo) sqrt(p (1 - p) / N) + (hi - lo) 2^-32
  // (and, for one posit8_2 point with cut exponent bits, mean - (lo + p (hi - lo)) within
  // the same bound, where p != (x - lo) / (hi - lo)).
  constexpr int kDraws = 100000;
  constexpr uint64_t kSeed = 0x2545f4914f6cdd1dull;
  std::mt19937_64 rng(0xfeedbeef);
  int points = 0, failures = 0;
  std::string first;
  auto run = [&](const Format& f, double x, double expected_p, uint64_t stream) {
    double lo, hi;
    neighbours(f, x, &lo, &hi);
    REQUIRE(hi > lo);
    double sum = 0;
    for (int i = 0; i < kDraws; ++i)
      sum += std::fabs(emu::round_value(f, x, emu::philox_draw(kSeed, stream, i)));
    const double mean = sum / kDraws;
    const double p = expected_p >= 0 ? expected_p : (std::fabs(x) - lo) / (hi - lo);
    const double bound = 5 * (hi - lo) * std::sqrt(p * (1 - p) / kDraws) + (hi - lo) * 0x1p-32;
    const double target = lo + p * (hi - lo);
    ++points;
    if (!(std::fabs(mean - target) <= bound)) {
      if (++failures == 1)
        first = emu::format_name(f) + " x " + emu::ref::show(x) + ": mean " + emu::ref::show(mean) +
                ", expected " + emu::ref::show(target) + " +- " + emu::ref::show(bound);
    }
  };
  uint64_t stream = 0;
  for (const char* spec : {"fp16:sr", "bf16:sr", "fp8_e4m3:sr", "posit8_0:sr", "fixed8_4:sr"}) {
    const Format f = parse_format(spec);
    for (int i = 0; i < 24; ++i) {
      // x = lo + p (hi - lo) with p in [0.01, 0.99] on a random pair of neighbours in range.
      double y = random_value(rng, f);
      if (std::fabs(y) >= f.max_finite || std::fabs(y) <= f.min_positive) continue;
      double lo, hi;
      neighbours(f, y, &lo, &hi);
      if (!(hi > lo)) continue;
      double p = 0.01 + 0.98 * static_cast<double>(rng() >> 11) * 0x1p-53;
      if (i == 0) p = 0.5;
      double x = std::copysign(lo + p * (hi - lo), y);
      run(f, x, -1, ++stream);
    }
  }
  // posit8_2 between 2^20 and 2^24: x = 2^23 sits 3/4 of the way along the encoding
  // (p = 3/4) but only (2^23 - 2^20) / (2^24 - 2^20) = 7/15 of the way in value.
  run(parse_format("posit8_2:sr"), 0x1p23, 0.75, ++stream);
  std::printf("SR statistics: %d points x %d draws\n", points, kDraws);
  INFO(first);
  CHECK(failures == 0);
}
