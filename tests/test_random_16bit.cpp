// Random cases against the independent reference (tests/reference/): 10^6
// per operation (quantize, add, sub, mul, div, sqrt) over fp16, bf16, e6m9,
// e8m12, posit16_1 and fixed16_8, cycling through every rounding mode and the
// :nosub / :sat (IEEE-like) and :wrap (fixed point) variants. Fixed seed.
//
// quantize takes binary32 bit patterns: half uniform over all 2^32 patterns
// (specials, subnormals, far out of range), half with exponents around the
// format's range. Operands of arithmetic are random codes of the format; a
// quarter of the second operands are a few codes away from the first (to
// reach cancellation and ties), and some are exact multiples or squares.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "numerics/format_spec.h"
#include "numerics/round.h"
#include "tests/reference/compare.h"
#include "tests/reference/reference.h"
#include "tests/sanitized.h"

using emu::Family;
using emu::Format;
using emu::parse_format;
using emu::ref::describe;
using emu::ref::Mismatches;

namespace {

// A fortieth (25,000) in a sanitizer build (tests/sanitized.h).
constexpr int kCasesPerOp = static_cast<int>(emu::test::sanitized_size(1000000, 40));

const char* const kBases[] = {"fp16", "bf16", "e6m9", "e8m12", "posit16_1", "fixed16_8"};
const char* const kModes[] = {":rne", ":rtz", ":rup", ":rdn", ":rna", ":sr"};

// For each base, every variant x mode it supports.
std::vector<std::vector<Format>> format_variants() {
  std::vector<std::vector<Format>> all;
  for (const char* base : kBases) {
    std::vector<Format> list;
    const Format b = parse_format(base);
    std::vector<std::string> variants = {""};
    if (b.family == Family::Ieee) variants = {"", ":nosub", ":sat", ":nosub:sat"};
    if (b.family == Family::Fixed) variants = {"", ":wrap"};
    for (const auto& v : variants)
      for (const char* mode : kModes) list.push_back(parse_format(std::string(base) + v + mode));
    all.push_back(list);
  }
  return all;
}

class Cases {
 public:
  Cases() : formats_(format_variants()), rng_(0x0e3a7c0ffee5eedull) {}

  // The format of case i: bases in turn, then variants and modes in turn.
  const Format& format(int i) const {
    const auto& list = formats_[i % formats_.size()];
    return list[(i / formats_.size()) % list.size()];
  }
  uint32_t u32() { return static_cast<uint32_t>(rng_()); }
  uint64_t code(const Format& f) { return rng_() & ((1ull << f.nbits) - 1); }
  double value(const Format& f) { return emu::ref::ref_decode(f, code(f)); }

  // A second operand: often close to the first (a few codes away, in the same
  // or opposite sign), else an independent random code.
  double partner(const Format& f, double a) {
    uint64_t ca = 0;
    if ((rng_() & 3) == 0 && emu::ref::ref_encode(f, a, &ca)) {
      uint64_t delta = rng_() % 9;
      uint64_t cb = (ca + delta - 4) & ((1ull << f.nbits) - 1);
      double b = emu::ref::ref_decode(f, cb);
      return (rng_() & 1) ? -b : b;
    }
    return value(f);
  }

  // A binary32 bit pattern: uniform, or with an exponent near f's range.
  float binary32(const Format& f) {
    uint32_t u = u32();
    if (u & 1) return emu::bits_float(u32());
    int lo = static_cast<int>(std::floor(std::log2(f.min_positive))) - 4;
    int hi = static_cast<int>(std::floor(std::log2(f.max_finite))) + 3;
    if (lo < -149) lo = -149;
    if (hi > 127) hi = 127;
    int e = lo + static_cast<int>(rng_() % static_cast<uint64_t>(hi - lo + 1));
    // Mantissa: random, or with few set bits (ties, exact values) a third of the time.
    uint32_t man = u32() & 0x7fffff;
    if (u % 3 == 0) man &= 0x7f0000u | (u32() & 0x100u);
    float m = 1.0f + static_cast<float>(man) * 0x1p-23f;
    float x = std::ldexp(m, e);
    return (u & 2) ? -x : x;
  }

 private:
  std::vector<std::vector<Format>> formats_;
  std::mt19937_64 rng_;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void report(const char* op, const Mismatches& m, double s) {
  std::printf("%-8s %llu cases, %llu mismatches, %.1f s\n", op, static_cast<unsigned long long>(m.cases()),
              static_cast<unsigned long long>(m.count()), s);
}

}  // namespace

TEST_CASE("random binary32 values: quantize and round_value", "[reference]") {
  Cases cases;
  Mismatches m;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCasesPerOp; ++i) {
    const Format& f = cases.format(i);
    const float x = cases.binary32(f);
    const uint32_t rand = cases.u32();
    const double want = emu::ref::ref_quantize(f, x, rand);
    auto what = [&] { return describe("quantize", {x}, (" rand " + emu::ref::show_code(rand)).c_str()); };
    m.check(f, static_cast<double>(emu::quantize(f, x, rand)), static_cast<double>(static_cast<float>(want)),
            what);
  }
  report("quantize", m, seconds_since(t0));
  INFO(m.report());
  CHECK(m.count() == 0);
}

TEST_CASE("random operands: add, sub, mul, div", "[reference]") {
  struct Op {
    const char* name;
    double (*impl)(const Format&, double, double, uint32_t);
    double (*ref)(const Format&, double, double, uint32_t);
  };
  const Op ops[] = {{"add", emu::format_add, emu::ref::ref_add},
                    {"sub", emu::format_sub, emu::ref::ref_sub},
                    {"mul", emu::format_mul, emu::ref::ref_mul},
                    {"div", emu::format_div, emu::ref::ref_div}};
  for (const Op& op : ops) {
    Cases cases;
    Mismatches m;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCasesPerOp; ++i) {
      const Format& f = cases.format(i);
      double a = cases.value(f);
      const double b = cases.partner(f, a);
      // Exact quotients: a = R_f(b * k) for a small odd k, often exactly b * k.
      if (op.impl == emu::format_div && i % 16 == 1) a = emu::ref::ref_mul(f, b, 3.0 + 2 * (i % 5));
      const uint32_t rand = cases.u32();
      m.check(f, op.impl(f, a, b, rand), op.ref(f, a, b, rand), [&] {
        return describe(op.name, {a, b}, (" rand " + emu::ref::show_code(rand)).c_str());
      });
    }
    report(op.name, m, seconds_since(t0));
    INFO(m.report());
    CHECK(m.count() == 0);
  }
}

TEST_CASE("random operands: sqrt", "[reference]") {
  Cases cases;
  Mismatches m;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCasesPerOp; ++i) {
    const Format& f = cases.format(i);
    double a = cases.value(f);
    if (i % 10 != 0) a = std::fabs(a);  // mostly real roots
    if (i % 10 == 5)
      a = emu::ref::ref_round(f,
                              emu::ref::exact_product(emu::ref::RefExact::of(a), emu::ref::RefExact::of(a)),
                              0);  // squares: exact roots
    const uint32_t rand = cases.u32();
    m.check(f, emu::format_sqrt(f, a, rand), emu::ref::ref_sqrt(f, a, rand),
            [&] { return describe("sqrt", {a}, (" rand " + emu::ref::show_code(rand)).c_str()); });
  }
  report("sqrt", m, seconds_since(t0));
  INFO(m.report());
  CHECK(m.count() == 0);
}

// Hard cases for the sticky bit of quotients and roots in an IEEE-like format
// with p = man_bits + 1 significand bits, built from integers:
//  - division: B odd with p bits, Q = -R / B mod 2^p, A = (Q B + R) / 2^p (an integer
//    below 2^p), so A / B = Q 2^-p + R / (B 2^p): a p-bit value plus a tail that
//    starts about p bits below its last bit;
//  - square root: r^2 = -t mod 2^p (t = 7 mod 8), S = (r^2 + t) / 2^p, so
//    sqrt(S 2^p) = r + t / (2r) + ...: again a p-bit value plus a far tail.
using u128 = unsigned __int128;

struct HardCase {
  double a, b;
};

HardCase hard_quotient(std::mt19937_64& rng, int p) {
  const u128 mod = static_cast<u128>(1) << p;
  const u128 B = ((static_cast<u128>(rng()) % (mod / 2)) + mod / 2) | 1;
  u128 inv = 1;  // B^-1 mod 2^p by Newton's iteration
  for (int i = 0; i < 7; ++i) inv = (inv * (2 - B * inv)) % mod;
  const u128 R = 1 + rng() % 1000;
  const u128 Q = (mod - (R * inv) % mod) % mod;
  const u128 A = (Q * B + R) / mod;
  return {std::ldexp(static_cast<double>(static_cast<uint64_t>(A)), -p),
          std::ldexp(static_cast<double>(static_cast<uint64_t>(B)), -p)};
}

double hard_square(std::mt19937_64& rng, int p) {
  const u128 mod = static_cast<u128>(1) << p;
  const u128 t = 8 * (rng() % 1000) + 7;
  const u128 target = (mod - t % mod) % mod;  // -t mod 2^p, = 1 mod 8
  u128 r = 1;
  for (int k = 3; k < p; ++k)  // r^2 = -t mod 2^k  ->  mod 2^(k+1)
    if (((r * r) ^ target) & ((static_cast<u128>(1) << (k + 1)) - 1)) r += static_cast<u128>(1) << (k - 1);
  u128 best = 0;
  for (u128 c : {r, mod - r, (r + mod / 2) % mod, (mod - r + mod / 2) % mod}) best = c > best ? c : best;
  const u128 S = (best * best + t) / mod;
  return std::ldexp(static_cast<double>(static_cast<uint64_t>(S)), -p);  // sqrt = (best + ...) 2^-p
}

// Wider formats (accumulator-only ones included), where the exact results of
// binary64 operands need all of numerics/exact_arith.h's 128 bits: random
// binary64 values and operand pairs with exponent gaps of 0..140 binades, so
// that sticky bits come from every stage (alignment, the posit bit string,
// quotient and root remainders). Every rounding mode except :sr (whose
// quotients and roots in formats with more than 31 significand bits are a
// known bug: test_stochastic.cpp).
TEST_CASE("random operands with wide exponent gaps in wide formats", "[reference]") {
  const char* const bases[] = {"fp64",      "e11m40",     "e8m23", "posit32_2",
                               "posit16_1", "fixed32_16", "int32", "fixed24_12:wrap"};
  const char* const modes[] = {":rne", ":rtz", ":rup", ":rdn", ":rna"};
  std::vector<Format> formats;
  for (const char* b : bases)
    for (const char* mode : modes) formats.push_back(parse_format(std::string(b) + mode));
  std::mt19937_64 rng(0x9a95);
  const int kCases = static_cast<int>(emu::test::sanitized_size(100000, 4));  // tests/sanitized.h
  auto random_double = [&](int e_lo, int e_hi) {
    double m = 1.0 + static_cast<double>(rng() >> 12) * 0x1p-52;
    if (rng() & 1) m = 1.0 + static_cast<double>((rng() >> 12) & ~0xffffffull) * 0x1p-52;  // shorter
    int e = e_lo + static_cast<int>(rng() % static_cast<uint64_t>(e_hi - e_lo + 1));
    double x = std::ldexp(m, e);
    return (rng() & 1) ? -x : x;
  };
  struct Op {
    const char* name;
    double (*impl)(const Format&, double, double, uint32_t);
    double (*ref)(const Format&, double, double, uint32_t);
  };
  const Op ops[] = {{"add", emu::format_add, emu::ref::ref_add},
                    {"sub", emu::format_sub, emu::ref::ref_sub},
                    {"mul", emu::format_mul, emu::ref::ref_mul},
                    {"div", emu::format_div, emu::ref::ref_div}};
  Mismatches m;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCases; ++i) {
    const Format& f = formats[i % formats.size()];
    int top = static_cast<int>(std::floor(std::log2(f.max_finite)));
    int bottom = static_cast<int>(std::floor(std::log2(f.min_positive)));
    // Values of f: round random doubles into it.
    const double a = emu::ref::ref_quantize(f, random_double(bottom, top));
    const int gap = static_cast<int>(rng() % 141);
    const double b0 = a != 0 && std::isfinite(a) ? std::ldexp(random_double(0, 0), std::ilogb(a) - gap)
                                                 : random_double(bottom, top);
    const double b = emu::ref::ref_quantize(f, b0);
    const double x = random_double(bottom - 3, top + 2);
    m.check(f, emu::round_value(f, x), emu::ref::ref_quantize(f, x), [&] { return describe("round", {x}); });
    for (const Op& op : ops)
      m.check(f, op.impl(f, a, b, 0), op.ref(f, a, b, 0), [&] { return describe(op.name, {a, b}); });
    // Hard cases: quotients and roots a hair off a value of f. q = R_up/down(a * b) makes
    // q / b = a + tiny; s = R_up/down(a * a) makes sqrt(s) = |a| + tiny.
    Format directed = f;
    directed.rounding = (i & 1) ? emu::Rounding::Up : emu::Rounding::Down;
    const double q = emu::ref::ref_mul(directed, a, b);
    m.check(f, emu::format_div(f, q, b), emu::ref::ref_div(f, q, b), [&] { return describe("div", {q, b}); });
    for (double r : {std::fabs(a), emu::ref::ref_mul(directed, a, a)})
      m.check(f, emu::format_sqrt(f, r), emu::ref::ref_sqrt(f, r), [&] { return describe("sqrt", {r}); });
    if (f.family == Family::Ieee && f.man_bits >= 10) {
      const HardCase h = hard_quotient(rng, f.man_bits + 1);
      m.check(f, emu::format_div(f, h.a, h.b), emu::ref::ref_div(f, h.a, h.b), [&] {
        return describe("div", {h.a, h.b});
      });
      const double sq = hard_square(rng, f.man_bits + 1);
      m.check(f, emu::format_sqrt(f, sq), emu::ref::ref_sqrt(f, sq), [&] { return describe("sqrt", {sq}); });
    }
  }
  report("wide", m, seconds_since(t0));
  INFO(m.report());
  CHECK(m.count() == 0);
}
