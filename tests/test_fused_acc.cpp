// Fused runs (docs/contract.md section 4.8, docs/fused_acc.md): the products of
// each run of F terms summed exactly with the accumulator and rounded once.
//
// Two independent references, neither sharing code with numerics/:
//  * MPFR: the run summed at 2400 bits (exact for any binary64 addends) and
//    rounded once by mpfr_get_flt in the target mode, for fp32 accumulators;
//  * the GMP reference (tests/reference): exact rational sums folded with
//    IEEE's zero rules and ref_round, for every other format (e5m10, bf16,
//    posits, wrapping fixed point, :sr with given draws, chunks).
#include <mpfr.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "calc/batch.h"
#include "core/numerics_policy.h"
#include "numerics/format_spec.h"
#include "numerics/mac.h"
#include "numerics/split_mul_spec.h"
#include "tests/reference/reference.h"
#include "tests/sanitized.h"

using namespace emu;
using emu::ref::RefExact;

namespace {

uint64_t bits64(double x) {
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
uint32_t bits32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
// Equal bits, every NaN equal to every NaN.
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || bits64(a) == bits64(b); }

// A draw per site that is not constant: (site * golden) >> 32, so that tests of
// :sr see which site a rounding used.
uint32_t site_draw(uint64_t site) { return static_cast<uint32_t>((site + 1) * 0x9e3779b97f4a7c15ull >> 32); }

// --- the MPFR reference, fp32 accumulators -------------------------------------

mpfr_rnd_t mpfr_mode(Rounding r) {
  switch (r) {
    case Rounding::NearestEven:
      return MPFR_RNDN;
    case Rounding::TowardZero:
      return MPFR_RNDZ;
    case Rounding::Up:
      return MPFR_RNDU;
    case Rounding::Down:
      return MPFR_RNDD;
    default:
      return MPFR_RNDN;
  }
}

// Runs of F terms (skipped zero terms keep their positions), each summed with
// acc in MPFR exactly (sequential mpfr_add at 2400 bits, no rounding happens,
// IEEE's signed-zero rules for exact zero sums) and rounded once to binary32 in
// `mode`; products exact, or rounded to binary32 to nearest when !mul_exact.
float mpfr_fused_fp32(Rounding mode, bool mul_exact, const std::vector<float>& a, const std::vector<float>& b,
                      int F) {
  const mpfr_rnd_t rnd = mpfr_mode(mode);
  mpfr_t s, p;
  mpfr_init2(s, 2400);
  mpfr_init2(p, 2400);
  float acc = 0.0f;
  const int64_t K = static_cast<int64_t>(a.size());
  for (int64_t r0 = 0; r0 < K; r0 += F) {
    bool any = false;
    mpfr_set_flt(s, acc, MPFR_RNDN);
    for (int64_t k = r0; k < std::min<int64_t>(r0 + F, K); ++k) {
      if (a[k] == 0.0f || b[k] == 0.0f) continue;
      any = true;
      mpfr_set_flt(p, a[k], MPFR_RNDN);
      mpfr_mul_d(p, p, b[k], MPFR_RNDN);  // exact at 2400 bits (or NaN for Inf * 0: not reached)
      if (!mul_exact) mpfr_set_flt(p, mpfr_get_flt(p, MPFR_RNDN), MPFR_RNDN);
      mpfr_add(s, s, p, rnd);  // exact; rnd only decides the sign of an exact zero
    }
    if (any) acc = mpfr_get_flt(s, rnd);
  }
  mpfr_clear(s);
  mpfr_clear(p);
  return acc;
}

MacPolicy fp32_policy(Rounding mode, bool mul_exact, int F) {
  MacPolicy p;
  p.mul_exact = mul_exact;
  p.acc.rounding = mode;
  p.fused = F;
  return p;
}

double run_mac(const MacPolicy& p, const std::vector<float>& a, const std::vector<float>& b,
               const float* bias = nullptr) {
  return mac_reduce(p, a.data(), b.data(), static_cast<int64_t>(a.size()), bias, site_draw);
}

// --- the GMP reference, any format -------------------------------------------

// docs/contract.md sections 4.1 - 4.8 written out: runs of F positions (a run
// of skipped terms leaves acc as it is), each the exact sum of acc and its
// products folded pairwise with exact_sum (IEEE zero-sign rules), rounded once
// into acc with the draw of the run's last position 2k+1; chunks of C terms
// promoted into acc_outer at 2K + c, the bias at 2K + chunks, R_out at
// 2K + chunks + 1. Products R_mul(a b) draw at 2k.
double ref_fused(const MacPolicy& p, const std::vector<float>& a, const std::vector<float>& b,
                 const float* bias = nullptr) {
  const int64_t K = static_cast<int64_t>(a.size());
  const int F = p.fused, C = p.chunk;
  auto rnd = [](const Format& f, uint64_t site) { return is_stochastic(f) ? site_draw(site) : 0u; };
  double acc = 0.0, outer = 0.0;
  const int64_t chunks = C > 0 && K > 0 ? (K + C - 1) / C : 1;
  std::vector<RefExact> run;
  int64_t run_last = 0;
  auto flush = [&]() {
    if (run.empty()) return;
    RefExact t = RefExact::of(acc);
    for (const RefExact& x : run) t = ref::exact_sum(t, x, p.acc.rounding == Rounding::Down);
    acc = ref::ref_round(p.acc, t, rnd(p.acc, 2 * run_last + 1));
    run.clear();
  };
  for (int64_t k = 0; k < K; ++k) {
    if (k > 0 && k % F == 0) flush();
    if (C > 0 && k > 0 && k % C == 0) {
      outer = ref::ref_round(
          p.acc_outer,
          ref::exact_sum(RefExact::of(outer), RefExact::of(acc), p.acc_outer.rounding == Rounding::Down),
          rnd(p.acc_outer, 2 * K + k / C - 1));
      acc = 0.0;
    }
    run_last = std::min<int64_t>((k / F + 1) * F, K) - 1;
    if (a[k] == 0.0f || b[k] == 0.0f) continue;
    RefExact x =
        ref::exact_product(RefExact::of(static_cast<double>(a[k])), RefExact::of(static_cast<double>(b[k])));
    if (!p.mul_exact) x = RefExact::of(ref::ref_round(p.mul, x, rnd(p.mul, 2 * k)));
    run.push_back(x);
  }
  flush();
  Format last = p.acc;
  if (C > 0) {
    acc = ref::ref_round(
        p.acc_outer,
        ref::exact_sum(RefExact::of(outer), RefExact::of(acc), p.acc_outer.rounding == Rounding::Down),
        rnd(p.acc_outer, 2 * K + chunks - 1));
    last = p.acc_outer;
  }
  if (bias)
    acc = ref::ref_round(last,
                         ref::exact_sum(RefExact::of(acc), RefExact::of(static_cast<double>(*bias)),
                                        last.rounding == Rounding::Down),
                         rnd(last, 2 * K + chunks));
  return ref::ref_round(p.out, RefExact::of(acc), rnd(p.out, 2 * K + chunks + 1));
}

// --- operands ----------------------------------------------------------------

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  uint64_t u(uint64_t n) { return rng() % n; }
  // A binary32 value: mostly moderate, sometimes wide exponents, subnormals,
  // zeros of either sign, rarely Inf or NaN (when `specials`).
  float value(bool specials, int exp_spread) {
    const uint64_t kind = u(100);
    const bool neg = u(2) != 0;
    float x;
    if (kind < 8)
      x = 0.0f;
    else if (specials && kind < 10)
      x = kind == 8 ? INFINITY : NAN;
    else if (kind < 14)
      x = std::ldexp(static_cast<float>(u(1u << 23) + 1), -149 - 0);  // subnormal-ish
    else {
      const int e = static_cast<int>(u(2 * exp_spread + 1)) - exp_spread;
      x = std::ldexp(1.0f + static_cast<float>(u(1u << 23)) * 0x1p-23f, e);
    }
    return neg ? -x : x;
  }
  // A bf16 value (8 significant bits).
  float bf16(int exp_spread) {
    const int e = static_cast<int>(u(2 * exp_spread + 1)) - exp_spread;
    float x = std::ldexp(1.0f + static_cast<float>(u(128)) / 128.0f, e);
    if (u(16) == 0) x = 0.0f;
    return u(2) ? -x : x;
  }
};

Format spec(const char* s) { return parse_format(s); }

}  // namespace

TEST_CASE("fused runs against MPFR, fp32 accumulators in four modes", "[fused][mpfr]") {
  Gen g(0x5eed1);
  const Rounding modes[] = {Rounding::NearestEven, Rounding::TowardZero, Rounding::Up, Rounding::Down};
  int64_t cases = 0, differ_from_unfused = 0;
  for (int i = 0; i < 120000; ++i) {
    const int K = 1 + static_cast<int>(g.u(13));
    const int F = 1 + static_cast<int>(g.u(6));
    const int spread = g.u(4) == 0 ? 120 : 20;  // sometimes products from 2^-298 to 2^256
    std::vector<float> a(K), b(K);
    for (int k = 0; k < K; ++k) {
      a[k] = g.value(false, spread);
      b[k] = g.value(false, spread);
    }
    const Rounding mode = modes[i % 4];
    const bool mul_exact = (i / 4) % 2 == 0;
    const MacPolicy p = fp32_policy(mode, mul_exact, F);
    const double got = run_mac(p, a, b);
    const float want = mpfr_fused_fp32(mode, mul_exact, a, b, F);
    INFO("case " << i << " K " << K << " F " << F << " mode " << static_cast<int>(mode));
    REQUIRE(same(got, static_cast<double>(want)));  // products may overflow to +Inf and -Inf: NaN
    MacPolicy q = p;
    q.fused = 0;
    if (!same(run_mac(q, a, b), got)) ++differ_from_unfused;
    ++cases;
  }
  // The tests would pass vacuously if fusing changed nothing.
  CHECK(differ_from_unfused > cases / 50);
}

TEST_CASE("tensor-core style: exact products of bf16 values, runs of 4, fp32 rtz (MPFR)", "[fused][mpfr]") {
  Gen g(0x7c0de);
  int64_t differ = 0;
  for (int i = 0; i < 3000; ++i) {
    const int K = 1 + static_cast<int>(g.u(96));
    std::vector<float> a(K), b(K);
    for (int k = 0; k < K; ++k) {
      a[k] = g.bf16(10);
      b[k] = g.bf16(10);
    }
    const MacPolicy p = fp32_policy(Rounding::TowardZero, true, 4);
    const double got = run_mac(p, a, b);
    REQUIRE(bits64(got) == bits64(static_cast<double>(mpfr_fused_fp32(Rounding::TowardZero, true, a, b, 4))));
    MacPolicy q = p;
    q.fused = 0;
    if (!same(run_mac(q, a, b), got)) ++differ;
  }
  CHECK(differ > 100);
}

TEST_CASE("fused runs against the GMP reference: short formats, posits, fixed point, :sr, chunks",
          "[fused][reference]") {
  struct Setup {
    const char *mul, *acc, *out;
    int chunk;
    const char* outer;
    bool specials;
    int spread;
  };
  const Setup setups[] = {
      {"exact", "e5m10", "e5m10", 0, "fp32", true, 8},
      {"exact", "e5m10:rtz", "fp16", 0, "fp32", false, 12},
      {"bf16", "bf16", "bf16", 0, "fp32", true, 30},
      {"bf16", "bf16:rdn", "bf16", 0, "fp32", false, 30},
      {"fp16", "e5m10:rup", "fp32", 0, "fp32", false, 10},
      {"exact", "fp32:rtz", "fp32", 0, "fp32", false, 140},  // subnormal and huge totals
      {"exact", "e6m9:sr", "e6m9", 0, "fp32", false, 10},
      {"e5m2:sr", "e8m10", "bf16", 0, "fp32", false, 6},
      {"exact", "posit16_1", "posit16_1", 0, "fp32", true, 8},
      {"fixed16_8", "fixed16_8:wrap", "fixed16_8:wrap", 0, "fp32", false, 6},
      {"exact", "fixed16_8:wrap", "fp32", 0, "fp32", false, 16},  // huge exact products wrap
      {"int8", "int32", "int8", 0, "fp32", false, 5},
      {"exact", "fixed32_16", "fp32", 0, "fp32", false, 12},  // saturating
      {"bf16", "e8m10", "bf16", 8, "fp32:sr", false, 10},
      {"exact", "fp16", "fp16", 12, "fp32:rtz", true, 8},
      {"fp32", "fp32:rtz", "fp32", 4, "fp32", false, 40},
  };
  Gen g(0xabcdef);
  int64_t total = 0;
  for (const Setup& s : setups) {
    MacPolicy base;
    base.mul_exact = std::string(s.mul) == "exact";
    if (!base.mul_exact) base.mul = spec(s.mul);
    base.acc = spec(s.acc);
    base.out = spec(s.out);
    base.chunk = s.chunk;
    base.acc_outer = spec(s.outer);
    const int n = static_cast<int>(emu::test::sanitized_size(8000, 4));  // tests/sanitized.h
    for (int i = 0; i < n; ++i) {
      const int K = static_cast<int>(g.u(20));
      std::vector<int> fs = {1, 2, 3, 4, 5, 8};
      if (s.chunk > 0) {  // F must divide the chunk
        fs.clear();
        for (int f = 1; f <= s.chunk; ++f)
          if (s.chunk % f == 0) fs.push_back(f);
      }
      MacPolicy p = base;
      p.fused = fs[g.u(fs.size())];
      std::vector<float> a(K), b(K);
      for (int k = 0; k < K; ++k) {
        a[k] = g.value(s.specials, s.spread);
        b[k] = g.value(s.specials, s.spread);
      }
      const float bias_v = g.value(false, 4);
      const float* bias = i % 3 == 0 ? &bias_v : nullptr;
      INFO(s.mul << " " << s.acc << " " << s.out << " chunk " << s.chunk << " F " << p.fused << " K " << K
                 << " case " << i);
      REQUIRE(same(run_mac(p, a, b, bias), ref_fused(p, a, b, bias)));
      ++total;
    }
  }
  CHECK(total == 16 * emu::test::sanitized_size(8000, 4));
}

TEST_CASE("fused: 1 is the unfused reduction, bit for bit", "[fused]") {
  const char* accs[] = {"fp32",    "fp32:rtz",  "fp32:rup",       "fp32:rdn", "e5m10",      "bf16:sr",
                        "e6m9:sr", "posit16_1", "fixed16_8:wrap", "int32",    "fixed32_16", "e8m10"};
  const char* muls[] = {"exact", "bf16", "e5m2:sr", "fp32", "fixed16_8"};
  Gen g(42);
  for (const char* acc : accs)
    for (const char* mul : muls)
      for (int chunk : {0, 3}) {
        MacPolicy p;
        p.mul_exact = std::string(mul) == "exact";
        if (!p.mul_exact) p.mul = spec(mul);
        p.acc = spec(acc);
        p.out = spec("fp32");
        p.chunk = chunk;
        p.acc_outer = spec("e8m10:sr");
        for (int i = 0; i < 1500; ++i) {
          const int K = static_cast<int>(g.u(12));
          std::vector<float> a(K), b(K);
          for (int k = 0; k < K; ++k) {
            a[k] = g.value(true, 30);
            b[k] = g.value(true, 30);
          }
          const float bias_v = g.value(false, 3);
          MacPolicy f1 = p;
          f1.fused = 1;
          INFO(mul << " " << acc << " chunk " << chunk << " case " << i);
          REQUIRE(same(run_mac(f1, a, b, &bias_v), run_mac(p, a, b, &bias_v)));
        }
      }
}

TEST_CASE("fused: approximate and split multipliers put their products into the run", "[fused]") {
  // split:fp32t with fused 2 and an fp32 rtz acc: the run is the exact sum of
  // every partial product (hi*hi + hi*lo + lo*hi of each term) plus acc, once
  // rounded; split:fp32t's parts are exact binary32 values, so the reference
  // forms them from the same tf32 split written out here.
  auto tf32 = [](float x) {  // round to nearest even at 11 significant bits (normal x)
    uint32_t u = bits32(x);
    const uint32_t lsb = (u >> 13) & 1u;
    u = (u + 0x0fffu + lsb) & ~0x1fffu;
    float r;
    std::memcpy(&r, &u, sizeof r);
    return r;
  };
  Gen g(7);
  for (int i = 0; i < 2000; ++i) {
    const int K = 1 + static_cast<int>(g.u(9));
    std::vector<float> a(K), b(K);
    std::vector<float> pa, pb;  // the partial products as operand pairs, in run groups
    for (int k = 0; k < K; ++k) {
      a[k] = std::ldexp(1.0f + static_cast<float>(g.u(1u << 23)) * 0x1p-23f, static_cast<int>(g.u(20)) - 10);
      b[k] = std::ldexp(1.0f + static_cast<float>(g.u(1u << 23)) * 0x1p-23f, static_cast<int>(g.u(20)) - 10);
      if (g.u(2)) a[k] = -a[k];
    }
    MacPolicy p;
    set_split_mul(p, parse_split_mul("split:fp32t"));
    p.acc = spec("fp32:rtz");
    p.fused = 2;
    // Reference: runs of two terms, six partial products each run, via MPFR.
    mpfr_t s, t;
    mpfr_init2(s, 2400);
    mpfr_init2(t, 2400);
    float acc = 0.0f;
    for (int r0 = 0; r0 < K; r0 += 2) {
      mpfr_set_flt(s, acc, MPFR_RNDN);
      for (int k = r0; k < std::min(r0 + 2, K); ++k) {
        const float ah = tf32(a[k]), al = tf32(a[k] - ah), bh = tf32(b[k]), bl = tf32(b[k] - bh);
        const float parts[3][2] = {{ah, bh}, {ah, bl}, {al, bh}};
        for (const auto& q : parts) {
          mpfr_set_flt(t, q[0], MPFR_RNDN);
          mpfr_mul_d(t, t, q[1], MPFR_RNDN);
          mpfr_add(s, s, t, MPFR_RNDZ);
        }
      }
      acc = mpfr_get_flt(s, MPFR_RNDZ);
    }
    mpfr_clear(s);
    mpfr_clear(t);
    INFO("case " << i);
    REQUIRE(bits64(run_mac(p, a, b)) == bits64(static_cast<double>(acc)));
  }
}

TEST_CASE("fused runs: edge cases worked out by hand", "[fused]") {
  auto dot = [](Rounding mode, int F, std::vector<float> a, std::vector<float> b) {
    return run_mac(fp32_policy(mode, true, F), a, b);
  };
  const float big = 0x1p50f, tiny = 0x1p-50f;
  SECTION("2^100 + 2^-100 - 2^100: exact in one run, lost term by term") {
    for (Rounding m : {Rounding::NearestEven, Rounding::TowardZero, Rounding::Up, Rounding::Down}) {
      CHECK(dot(m, 4, {big, tiny, -big}, {big, tiny, big}) == 0x1p-100);
      CHECK(dot(m, 3, {big, tiny, -big}, {big, tiny, big}) == 0x1p-100);
    }
    CHECK(bits64(dot(Rounding::NearestEven, 0, {big, tiny, -big}, {big, tiny, big})) == bits64(0.0));
    // Runs {2^100, 2^-100} and {-2^100}: the first rounds 2^-100 away (toward zero).
    CHECK(bits64(dot(Rounding::TowardZero, 2, {big, tiny, -big}, {big, tiny, big})) == bits64(0.0));
    // ... and upward it keeps one ulp of 2^100, which survives the second run.
    CHECK(dot(Rounding::Up, 2, {big, tiny, -big}, {big, tiny, big}) == 0x1p77);
  }
  SECTION("a directed rounding after cancellation sees the tiny rest") {
    // 2^100 - 2^100 - 2^-160: the exact total is -2^-160, below fp32's 2^-149.
    const std::vector<float> a = {big, -big, -0x1p-80f}, b = {big, big, 0x1p-80f};
    CHECK(bits64(dot(Rounding::TowardZero, 4, a, b)) == bits64(-0.0));
    CHECK(dot(Rounding::Down, 4, a, b) == -0x1p-149);
    CHECK(bits64(dot(Rounding::Up, 4, a, b)) == bits64(-0.0));
    CHECK(bits64(dot(Rounding::NearestEven, 4, a, b)) == bits64(-0.0));
  }
  SECTION("exact zero totals take IEEE's sign") {
    CHECK(bits64(dot(Rounding::NearestEven, 4, {1, -1}, {1, 1})) == bits64(0.0));
    CHECK(bits64(dot(Rounding::Down, 4, {1, -1}, {1, 1})) == bits64(-0.0));
    // Products that underflow to -0 under a rounded mul: +0 + -0 = +0 (-0 rounding down).
    MacPolicy p = fp32_policy(Rounding::NearestEven, false, 4);
    p.mul = spec("bf16");
    CHECK(bits64(run_mac(p, {-0x1p-100f, -0x1p-100f}, {0x1p-100f, 0x1p-100f})) == bits64(0.0));
    p.acc = spec("fp32:rdn");
    CHECK(bits64(run_mac(p, {-0x1p-100f, -0x1p-100f}, {0x1p-100f, 0x1p-100f})) == bits64(-0.0));
  }
  SECTION("Inf and NaN") {
    CHECK(std::isnan(dot(Rounding::NearestEven, 4, {INFINITY, -INFINITY}, {1, 1})));
    CHECK(dot(Rounding::NearestEven, 4, {INFINITY, 1e30f}, {1, -1e30f}) == INFINITY);
    CHECK(dot(Rounding::TowardZero, 4, {-INFINITY, 2}, {1, 3}) == -INFINITY);
    CHECK(std::isnan(dot(Rounding::NearestEven, 4, {NAN, 1}, {1, 1})));
    // A zero operand skips the term, Inf or NaN on the other side included.
    CHECK(dot(Rounding::NearestEven, 4, {NAN, 2}, {0, 3}) == 6.0);
  }
  SECTION("overflow of the rounded run, not of its terms") {
    // 2^127 * 1.5 + 2^127 * 1.5 - 2^127 * 1.5: unfused overflows to Inf, fused is exact.
    CHECK(dot(Rounding::NearestEven, 4, {0x1.8p127f, 0x1.8p127f, -0x1.8p127f}, {1, 1, 1}) == 0x1.8p127);
    CHECK(dot(Rounding::NearestEven, 0, {0x1.8p127f, 0x1.8p127f, -0x1.8p127f}, {1, 1, 1}) == INFINITY);
    CHECK(dot(Rounding::TowardZero, 4, {0x1.8p127f, 0x1.8p127f}, {1, 1}) == 0x1.fffffep127);
  }
  SECTION("subnormal results") {
    // 2^-140 + 2^-149 + 2^-150 in one run: rne gives 2^-140 + 2^-148 (a tie rounds to even).
    CHECK(dot(Rounding::NearestEven, 4, {0x1p-70f, 0x1p-74f, 0x1p-75f}, {0x1p-70f, 0x1p-75f, 0x1p-75f}) ==
          0x1p-140 + 0x1p-148);
    CHECK(dot(Rounding::TowardZero, 4, {0x1p-70f, 0x1p-74f, 0x1p-75f}, {0x1p-70f, 0x1p-75f, 0x1p-75f}) ==
          0x1p-140 + 0x1p-149);
  }
  SECTION("skipped terms keep their positions; a run of skipped terms changes nothing") {
    // F = 2, terms {1, 0}, {0, 0}, {2^-24, 2^-24}: runs 0 and 2 round; rtz keeps
    // 1 then 1 + 2^-23 exactly.
    const std::vector<float> a = {1, 5, 0, 7, 0x1p-24f, 0x1p-24f}, b = {1, 0, 3, 0, 1, 1};
    CHECK(dot(Rounding::TowardZero, 2, a, b) == 1.0 + 0x1p-23);
    // Unfused (or runs {1, 0, 0}, {0, 2^-24, 2^-24}) rtz drops each 2^-24 alone: 1.
    CHECK(dot(Rounding::TowardZero, 0, a, b) == 1.0);
    CHECK(dot(Rounding::TowardZero, 3, a, b) == 1.0 + 0x1p-23);
    CHECK(dot(Rounding::TowardZero, 5, a, b) == 1.0);  // runs {1, .., 2^-24}, {2^-24}
  }
  SECTION("K not a multiple of F, and K = 0") {
    CHECK(dot(Rounding::NearestEven, 4, {1, 2, 3, 4, 5}, {1, 1, 1, 1, 1}) == 15.0);
    CHECK(bits64(dot(Rounding::NearestEven, 4, {}, {})) == bits64(0.0));
  }
  SECTION("chunks with acc_outer: runs flush at a chunk's end before its promotion") {
    MacPolicy p = fp32_policy(Rounding::TowardZero, true, 2);
    p.acc = spec("bf16:rtz");
    p.chunk = 4;
    p.acc_outer = spec("fp32");
    // Chunk 0: runs {1, 2^-9}, {2^-9, 0}: bf16 rtz 1 then 1 (1 + 2^-9 < 1 + 2^-7); chunk 1: {2^-9, 2^-9} ->
    // 2^-8. outer: 1 + 2^-8.
    const std::vector<float> a = {1, 0x1p-9f, 0x1p-9f, 0, 0x1p-9f, 0x1p-9f}, b = {1, 1, 1, 1, 1, 1};
    CHECK(run_mac(p, a, b) == 1.0 + 0x1p-8);
    p.fused = 4;  // chunk 0 in one run: 1 + 2^-8 -> bf16 rtz 1; chunk 1: 2^-8
    CHECK(run_mac(p, a, b) == 1.0 + 0x1p-8);
    p.acc = spec("bf16:rup");  // chunk 0: 1 + 2^-8 rounds up to 1 + 2^-7
    CHECK(run_mac(p, a, b) == 1.0 + 0x1p-7 + 0x1p-8);
  }
  SECTION(":sr draws at the accumulation site of the run's last position") {
    MacPolicy p = fp32_policy(Rounding::Stochastic, true, 3);
    p.acc = spec("e5m2:sr");
    std::vector<uint64_t> sites;
    auto draw = [&](uint64_t s) {
      sites.push_back(s);
      return 0u;
    };
    const std::vector<float> a = {1, 1, 1, 1, 0},
                             b = {1, 1, 1, 1, 1};  // K = 5: runs 0..2, 3..4 (last skipped)
    mac_reduce(p, a.data(), b.data(), 5, nullptr, draw);
    CHECK(sites == std::vector<uint64_t>{5, 9});  // 2*2+1 and 2*4+1 (position 4 is skipped but last)
  }
}

TEST_CASE("fused: wrapping fixed point gives add_into's result for representable totals", "[fused]") {
  // One term per run (F = 1) is add_into itself; with a huge exact product
  // (2^40 * 2^40 under mul exact) the wrap reduction keeps the low bits.
  MacPolicy p;
  p.mul_exact = true;
  p.acc = spec("fixed16_8:wrap");
  p.out = spec("fixed16_8:wrap");
  Gen g(99);
  for (int i = 0; i < 20000; ++i) {
    const int K = 1 + static_cast<int>(g.u(6));
    std::vector<float> a(K), b(K);
    for (int k = 0; k < K; ++k) {
      a[k] = g.value(false, 45);
      b[k] = g.value(false, 45);
    }
    MacPolicy f = p;
    f.fused = 1;
    REQUIRE(same(run_mac(f, a, b), run_mac(p, a, b)));
    f.fused = 3;
    REQUIRE(same(run_mac(f, a, b), ref_fused(f, a, b)));
  }
}

TEST_CASE("policy key fused: parsing, errors, describe", "[fused][policy]") {
  NumericsPolicy np;
  np.set("mul", "exact");
  np.set("acc", "fp32:rtz");
  np.set("fused", "4");
  LayerNumerics n = np.resolve("layer");
  CHECK(n.mac.fused == 4);
  CHECK(n.describe().find("fused=4") != std::string::npos);
  CHECK_FALSE(n.passthrough());
  for (const char* bad : {"-1", "x", "4.5", "65537", ""}) {
    INFO(bad);
    try {
      np.set("fused", bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      const std::string w = e.what();
      CHECK(w.find("fused") != std::string::npos);
    }
  }
  NumericsPolicy bad;
  bad.set("fused", "4");
  bad.set("chunk", "6");
  try {
    bad.resolve("x");
    FAIL("chunk 6 with fused 4 accepted");
  } catch (const std::invalid_argument& e) {
    const std::string w = e.what();
    CHECK(w.find("chunk") != std::string::npos);
    CHECK(w.find("fused") != std::string::npos);
  }
  NumericsPolicy ok;
  ok.set("fused", "4");
  ok.set("chunk", "32");
  CHECK(ok.resolve("x").mac.chunk == 32);
  bool listed = false;
  for (const std::string& k : NumericsPolicy::keys()) listed = listed || k == "fused";
  CHECK(listed);
}

TEST_CASE("calc --batch dot takes fused=F", "[fused][calc]") {
  auto batch = [](const std::string& input) {
    std::istringstream in(input);
    std::ostringstream out;
    calc::run_calc_batch(in, out, 0);
    return out.str();
  };
  // 2^40 * 2^40 + 1 * 1 - 2^40 * 2^40 in fp32: fused keeps the 1 (0x3f800000), unfused loses it.
  const std::string ops = " 0x53800000 0x53800000 1 1 0xd3800000 0x53800000\n";
  CHECK(batch("dot exact fp32 fp32 fused=4" + ops) == "0x3f800000\n");
  CHECK(batch("dot exact fp32 fp32" + ops) == "0x00000000\n");
  CHECK(batch("dot exact fp32 fp32 fused=3 chunk=4 1 1\n").rfind("error:", 0) == 0);
  CHECK(batch("dot exact fp32 fp32 fused=x 1 1\n").rfind("error:", 0) == 0);
}
