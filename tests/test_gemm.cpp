// mac_gemm (backends/cpu/gemm.h) and the fast rounding kernels it uses
// (numerics/fast_round.h), compared bit for bit with the definitions:
// round_value() for every rounding, and mac_reduce() per output for the GEMM.
//
// The GEMM cases check which path ran, so that a fast path silently falling
// back to the generic one fails the test instead of passing it.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/bcast_operand.h"
#include "backends/cpu/gemm.h"
#include "numerics/fast_round.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "tests/sanitized.h"

using namespace emu;

namespace {

// ---------------------------------------------------------------------------
// Inputs for the rounding kernels

// Binary32 values spread over every binade, with the specials mixed in.
struct FloatSource {
  std::mt19937_64 rng;
  explicit FloatSource(uint64_t seed) : rng(seed) {}
  float any() {
    switch (rng() % 16) {
      case 0:
        return 0.0f;
      case 1:
        return -0.0f;
      case 2:
        return std::numeric_limits<float>::infinity();
      case 3:
        return -std::numeric_limits<float>::infinity();
      case 4:
        return std::numeric_limits<float>::quiet_NaN();
      case 5:
        return bits_float(static_cast<uint32_t>(rng()) & 0x807fffffu);  // subnormal
      default:
        return bits_float(static_cast<uint32_t>(rng()));  // anything, NaNs included
    }
  }
  // A finite value with magnitude around 2^[lo, hi).
  float around(int lo, int hi) {
    const float m = 1.0f + static_cast<float>(rng() % (1u << 23)) / static_cast<float>(1u << 23);
    const float v = std::ldexp(m, lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo)));
    return (rng() & 1) ? -v : v;
  }
  // A value with few significant bits, so that products and sums land on ties.
  float short_value(int lo, int hi, int bits) {
    const float m = static_cast<float>((rng() % (1u << bits)) | (1u << bits));
    const float v = std::ldexp(m, lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo)) - bits);
    return (rng() & 1) ? -v : v;
  }
};

// Values of f, their neighbours in binary64 and the midpoints between
// consecutive codes (the ties), for IEEE-like formats of up to 16 bits.
std::vector<double> ieee_edge_values(const Format& f) {
  std::vector<double> out;
  const uint64_t codes = 1ull << (1 + f.exp_bits + f.man_bits);
  const uint64_t step = codes > (1u << 14) ? codes >> 14 : 1;
  for (uint64_t c = 0; c + 1 < codes; c += step) {
    const double v = decode(f, c), w = decode(f, c + 1);
    if (std::isnan(v) || std::isinf(v)) continue;
    out.push_back(v);
    out.push_back(std::nextafter(v, HUGE_VAL));
    out.push_back(std::nextafter(v, -HUGE_VAL));
    if (!std::isnan(w) && !std::isinf(w) && (v >= 0) == (w >= 0) && v != 0 && w != 0) {
      const double mid = v + (w - v) / 2;
      out.push_back(mid);
      out.push_back(std::nextafter(mid, HUGE_VAL));
      out.push_back(std::nextafter(mid, -HUGE_VAL));
    }
  }
  const double m = f.max_finite;
  for (double x : {m, m * (1 + std::ldexp(1.0, -f.man_bits - 1)), m * 2, f.min_positive / 2, f.min_positive,
                   f.min_positive * 0.75, f.min_positive * 0.25, f.min_normal, 1e300, 1e-300, 0.0, -0.0})
    for (double s : {1.0, -1.0}) out.push_back(s * x);
  out.push_back(std::numeric_limits<double>::infinity());
  out.push_back(-std::numeric_limits<double>::infinity());
  out.push_back(std::numeric_limits<double>::quiet_NaN());
  return out;
}

bool same_bits(double a, double b) { return double_bits(a) == double_bits(b); }
bool same_bits(float a, float b) { return float_bits(a) == float_bits(b); }

}  // namespace

// ---------------------------------------------------------------------------
// Rounding kernels vs round_value

TEST_CASE("round-to-odd sums: scalar, vector and the definition agree", "[gemm][fast_round]") {
  // The definition via round.h: truncation to binary32, last bit set when
  // rounding down and up differ.
  const Format rz = parse_format("fp32:rtz"), dn = parse_format("fp32:rdn"), up = parse_format("fp32:rup");
  auto rto = [&](const Exact& x) {
    const float t = static_cast<float>(round_exact(rz, x, 0));
    const bool inexact = round_exact(dn, x, 0) != round_exact(up, x, 0);
    return bits_float(float_bits(t) | (inexact ? 1u : 0u));
  };
  FloatSource src(6);
  std::vector<float> as, bs;
  for (int i = 0; i < 300000; ++i) {
    switch (i % 4) {
      case 0:
        as.push_back(src.around(-140, 60));
        bs.push_back(src.around(-140, 60));
        break;
      case 1:
        as.push_back(src.short_value(-30, 30, 8));
        bs.push_back(src.short_value(-60, 30, 20));
        break;
      case 2:
        as.push_back(bits_float(static_cast<uint32_t>(src.rng()) & 0x807fffffu));
        bs.push_back(src.any());
        break;
      default:
        as.push_back(src.around(-20, 20));
        bs.push_back(-as.back() * (1 + std::ldexp(1.0f, -20)));
        break;
    }
  }
  size_t checked = 0;
  for (size_t i = 0; i + 16 <= as.size(); i += 16) {
    v16f32 va, vb;
    for (int l = 0; l < 16; ++l) {
      va[l] = as[i + l];
      vb[l] = bs[i + l];
    }
    const v16f32 vs = lane_sum_rto(va, vb);
    for (int l = 0; l < 16; ++l) {
      const float a = as[i + l], b = bs[i + l];
      if (!std::isfinite(a) || !std::isfinite(b) || std::fabs(static_cast<double>(a) + b) >= 3.4e38) continue;
      const float ss = lane_sum_rto(a, b), sd = rto(exact_add(a, b, false));
      if (sd == 0.0f) continue;  // the sign of an exact zero sum is not part of RTO's contract
      ++checked;
      if (!same_bits(ss, sd) || !same_bits(vs[l], sd))
        FAIL_CHECK("sum a=" << a << " b=" << b << " scalar=" << ss << " vector=" << vs[l] << " ref=" << sd);
    }
  }
  CHECK(checked > as.size() / 2);
}

TEST_CASE("fast_ieee_rne_d equals round_value where it does not flag", "[gemm][fast_round]") {
  for (const char* spec : {"e6m6", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3:sat", "fp6_e2m3",
                           "fp4_e2m1", "e3m2", "tf32", "fp32", "e8m1", "e5m0", "e2m5:sat", "e10m40"}) {
    INFO(spec);
    const Format f = parse_format(spec);
    REQUIRE(fast_ieee_rne_d_supported(f));
    const FastIeeeRneD p = fast_ieee_rne_d_params(f);
    FloatSource src(1);
    std::vector<double> xs = ieee_edge_values(f.man_bits <= 10 ? f : parse_format("e5m4"));
    for (int i = 0; i < 200000; ++i) {
      const float a = i % 3 ? src.around(-70, 40) : src.any(), b = i % 5 ? src.around(-70, 40) : src.any();
      xs.push_back(static_cast<double>(a) * static_cast<double>(b));
      const float c = src.short_value(-30, 30, 6), d = src.short_value(-30, 30, 6);
      xs.push_back(static_cast<double>(c) * static_cast<double>(d));
    }
    size_t flagged = 0, checked = 0;
    for (double x : xs) {
      uint64_t key;
      const double r = fast_ieee_rne_d(p, x, &key);
      if (fast_ieee_rne_flagged(p, key)) {
        ++flagged;
        continue;
      }
      ++checked;
      const double ref = round_value(f, x);
      if (!same_bits(r, ref)) FAIL_CHECK("x=" << x << " fast=" << r << " ref=" << ref);
    }
    CHECK(checked > flagged);
    // The same, 8 lanes at a time.
    for (size_t i = 0; i + 8 <= xs.size(); i += 8) {
      v8f64 v;
      for (int l = 0; l < 8; ++l) v[l] = xs[i + l];
      v8u64 key;
      const v8f64 r = fast_ieee_rne_d(p, v, &key);
      for (int l = 0; l < 8; ++l) {
        if (fast_ieee_rne_flagged(p, key[l])) continue;
        if (!same_bits(r[l], round_value(f, xs[i + l]))) FAIL_CHECK("vector lane, x=" << xs[i + l]);
      }
    }
  }
}

TEST_CASE("fast_ieee_rne_product_f equals round_value of the exact product", "[gemm][fast_round]") {
  for (const char* spec :
       {"e6m6", "fp16", "fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1", "e7m21", "e7m2",
        "e5m10:sat", "e4m0", "e1m3", "bf16", "tf32", "e8m1", "e8m21", "bf16:sat"}) {
    INFO(spec);
    const Format f = parse_format(spec);
    REQUIRE(fast_ieee_rne_product_f_supported(f));
    const FastIeeeRneF p = fast_ieee_rne_f_params(f);
    FloatSource src(2);
    std::vector<float> as, bs;
    for (int i = 0; i < 400000; ++i) {
      switch (i % 4) {
        case 0:
          as.push_back(src.around(-80, 40));
          bs.push_back(src.around(-80, 40));
          break;
        case 1:
          as.push_back(src.short_value(-20, 10, 5));
          bs.push_back(src.short_value(-20, 10, 6));
          break;
        case 2:
          as.push_back(src.any());
          bs.push_back(src.around(-150, 128));
          break;
        default:
          as.push_back(src.around(-150, 20));
          bs.push_back(src.around(-150, 20));
          break;
      }
    }
    // Products at and next to the format's ties: a = tie / b exactly.
    for (double v : ieee_edge_values(f)) {
      if (!std::isfinite(v) || v == 0 || std::fabs(v) > 1e30 || std::fabs(v) < 1e-30) continue;
      for (float b : {1.0f, 3.0f, 0.75f, -5.0f, 1.0f / 1024}) {
        as.push_back(static_cast<float>(v / b));
        bs.push_back(b);
      }
    }
    size_t checked = 0;
    for (size_t i = 0; i < as.size(); ++i) {
      uint32_t key;
      const float r = fast_ieee_rne_product_f(p, as[i], bs[i], &key);
      if (fast_ieee_rne_flagged(p, key)) continue;
      ++checked;
      const float ref = static_cast<float>(round_value(f, static_cast<double>(as[i]) * bs[i]));
      if (!same_bits(r, ref)) FAIL_CHECK("a=" << as[i] << " b=" << bs[i] << " fast=" << r << " ref=" << ref);
    }
    CHECK(checked > as.size() / 2);
    // The normal form (the GEMM's normal path) on its domain: unflagged, the exact
    // product zero or at least 2^emin in magnitude, |b| 2^(23 - man_bits) finite.
    size_t normal = 0;
    for (size_t i = 0; i < as.size(); ++i) {
      uint32_t key;
      fast_ieee_rne_product_f(p, as[i], bs[i], &key);
      const double x = static_cast<double>(as[i]) * bs[i];
      if (fast_ieee_rne_flagged(p, key) || (x != 0 && std::fabs(x) < std::ldexp(1.0, f.emin)) ||
          !(std::fabs(static_cast<double>(bs[i])) * p.scale < 0x1p127))
        continue;
      ++normal;
      const float ref = static_cast<float>(round_value(f, x));
      const float r = fast_ieee_rne_product_normal_f(p, as[i], bs[i]);
      if (!same_bits(r, ref) && !(r == 0 && ref == 0))
        FAIL_CHECK("normal form: a=" << as[i] << " b=" << bs[i] << " fast=" << r << " ref=" << ref);
      v8f32 va = splat<v8f32>(as[i]), vb = splat<v8f32>(bs[i]);
      const v8f32 rv = fast_ieee_rne_product_normal_f(p, va, vb);
      if (!same_bits(rv[3], r)) FAIL_CHECK("normal form, 8 lanes: a=" << as[i] << " b=" << bs[i]);
    }
    CHECK(normal > 10000);  // 11,500 for e1m3 (narrow range) to most of the 400,000 for wide formats
    // 16 lanes at a time: the AVX-512 round-to-odd product where compiled in.
    for (size_t i = 0; i + 16 <= as.size(); i += 16) {
      v16f32 va, vb;
      for (int l = 0; l < 16; ++l) {
        va[l] = as[i + l];
        vb[l] = bs[i + l];
      }
      v16u32 key;
      const v16f32 r = fast_ieee_rne_product_f(p, va, vb, &key);
      for (int l = 0; l < 16; ++l) {
        if (fast_ieee_rne_flagged(p, key[l])) continue;
        const float ref = static_cast<float>(round_value(f, static_cast<double>(as[i + l]) * bs[i + l]));
        if (!same_bits(r[l], ref)) FAIL_CHECK("vector lane, a=" << as[i + l] << " b=" << bs[i + l]);
      }
    }
  }
}

// The GEMM's short paths (operands with at most s = 23 - man_bits significant
// bits together): random pairs of several splits of the s bits and shorter
// ones, and every pair of 7-bit significands (e6m6 values) at several binades
// where 14 <= s, against round_value of the exact product; scalar, 8 and 16
// lanes. The short form on the normal form's domain, the short form with the
// subnormal clamp on every unflagged product (a zero may come out +0 for -0,
// which the GEMM's accumulators, never -0, do not see).
TEST_CASE("fast_ieee_rne_product_short_f equals round_value for operands of 23 - man_bits bits together",
          "[gemm][fast_round]") {
  for (const char* spec : {"e6m6", "fp16", "fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp4_e2m1", "e7m21", "e7m2",
                           "e5m10:sat", "e4m0", "bf16", "tf32", "e8m1", "e8m21", "e8m11"}) {
    INFO(spec);
    const Format f = parse_format(spec);
    REQUIRE(fast_ieee_rne_product_f_supported(f));
    const FastIeeeRneF p = fast_ieee_rne_f_params(f);
    const int s_bits = 23 - f.man_bits;
    // Operands around 2^[lo, hi): products over the normal range and below 2^emin.
    const int lo = std::max(-80, f.emin / 2 - 1 - f.man_bits),
              hi = std::min(20, std::ilogb(f.max_finite) / 2 + 1);
    FloatSource src(3);
    std::vector<float> as, bs;
    for (int pa : {1, s_bits / 2, s_bits - 1, (s_bits + 1) / 2})
      for (int pb : {s_bits - pa, (s_bits - pa) / 2, 1})
        for (int i = 0; i < 4000; ++i) {
          if (pa < 1 || pb < 1 || pa + pb > s_bits) continue;
          as.push_back(src.short_value(lo, hi, pa - 1));
          bs.push_back(src.short_value(lo, hi, pb - 1));
        }
    for (int ea : {-3, 0, 5, f.emin - 2, f.emin / 2})
      for (uint32_t ia = 64; ia < 128 && s_bits >= 14; ++ia)
        for (uint32_t ib = 64; ib < 128; ++ib) {
          as.push_back(std::ldexp(static_cast<float>(ia), ea - 6) * ((ia & 1) ? -1.0f : 1.0f));
          bs.push_back(std::ldexp(static_cast<float>(ib), -6) * ((ib & 2) ? -1.0f : 1.0f));
        }
    size_t normal = 0, sub = 0;
    for (size_t i = 0; i + 16 <= as.size(); i += 16) {
      v16f32 va, vb;
      v8f32 wa, wb;
      for (int l = 0; l < 16; ++l) {
        va[l] = as[i + l];
        vb[l] = bs[i + l];
        if (l < 8) {
          wa[l] = as[i + l];
          wb[l] = bs[i + l];
        }
      }
      const v16f32 r16 = fast_ieee_rne_product_short_f(p, va, vb);
      const v8f32 r8 = fast_ieee_rne_product_short_f(p, wa, wb);
      const v16f32 s16 = fast_ieee_rne_product_short_sub_f(p, va, vb);
      const v8f32 s8 = fast_ieee_rne_product_short_sub_f(p, wa, wb);
      for (int l = 0; l < 16; ++l) {
        const float a = as[i + l], b = bs[i + l];
        uint32_t key;
        fast_ieee_rne_product_f(p, a, b, &key);
        const double x = static_cast<double>(a) * b;
        if (fast_ieee_rne_flagged(p, key) || !(std::fabs(static_cast<double>(b)) * p.scale < 0x1p127))
          continue;
        const float ref = static_cast<float>(round_value(f, x));
        auto same = [&](float r) { return same_bits(r, ref) || (r == 0 && ref == 0); };
        ++sub;
        const float rs = fast_ieee_rne_product_short_sub_f(p, a, b);
        if (!same(rs))
          FAIL_CHECK("subnormal clamp: a=" << a << " b=" << b << " fast=" << rs << " ref=" << ref);
        if (!same_bits(s16[l], rs)) FAIL_CHECK("subnormal clamp, 16 lanes: a=" << a << " b=" << b);
        if (l < 8 && !same_bits(s8[l], rs)) FAIL_CHECK("subnormal clamp, 8 lanes: a=" << a << " b=" << b);
        if (std::fabs(x) < std::ldexp(1.0, f.emin)) continue;
        ++normal;
        const float r = fast_ieee_rne_product_short_f(p, a, b);
        if (!same_bits(r, ref)) FAIL_CHECK("a=" << a << " b=" << b << " fast=" << r << " ref=" << ref);
        if (!same_bits(r16[l], ref)) FAIL_CHECK("16 lanes: a=" << a << " b=" << b);
        if (l < 8 && !same_bits(r8[l], ref)) FAIL_CHECK("8 lanes: a=" << a << " b=" << b);
      }
    }
    CHECK(normal > as.size() / 8);
    CHECK(sub > normal + as.size() / 100);  // products below 2^emin as well
  }
}

// round_away_bits against a second reading of its definition: the value's
// significand as an integer, rounded up in magnitude to h bits by integer
// arithmetic in binary64 (exact here).
TEST_CASE("round_away_bits rounds away from zero to h significant bits", "[gemm][fast_round]") {
  FloatSource src(12);
  size_t moved = 0;  // inputs that the rounding changed
  for (int h : {kCoarseBitsA, kCoarseBitsB, 1, 23}) {
    for (int i = 0; i < 200000; ++i) {
      float x = i % 5 == 0 ? bits_float(static_cast<uint32_t>(src.rng()) & 0x807fffffu)   // subnormal
                           : bits_float(static_cast<uint32_t>(src.rng()) & 0xff7fffffu);  // finite
      if (i % 7 == 0) x = bits_float(float_bits(x) & ~((1u << (24 - h)) - 1u));           // already h bits
      const double ax = std::fabs(static_cast<double>(x));
      double want = 0;
      if (ax != 0) {
        const int e = std::ilogb(ax);                    // x = sig 2^e, sig in [1, 2)
        const double unit = std::ldexp(1.0, e + 1 - h);  // the h-th significant bit
        want = std::ceil(ax / unit) * unit;              // ax / unit < 2^h: exact
        want = std::signbit(x) ? -want : want;
      }
      const float r = round_away_bits(x, h);
      moved += !same_bits(r, x);
      if (want >= 0x1p128 || want <= -0x1p128) {
        if (!std::isinf(r)) FAIL_CHECK("h=" << h << " x=" << x << " gives " << r << ", not Inf");
      } else if (!same_bits(r, static_cast<float>(want)) && !(x == 0 && same_bits(r, x))) {
        FAIL_CHECK("h=" << h << " x=" << x << " gives " << r << ", want " << want);
      }
    }
  }
  CHECK(moved > 400000);  // of 800,000: most have more than h bits
}

// The GEMM's coarse form (fast_ieee_rne_product_coarse_f, any binary32
// operands) on its domain against round_value of the exact product: N(0,1)
// pairs, products just below and above powers of two (where the coarse
// constant leaves x's binade), ties of the format, operands of every binade
// (binary32 subnormals included); scalar, 8 and 16 lanes, the A operands as
// broadcasts too (as the kernels read them). And where the predicate stops.
TEST_CASE("fast_ieee_rne_product_coarse_f equals round_value on the normal form's domain",
          "[gemm][fast_round]") {
  CHECK(fast_ieee_rne_product_coarse_ok(fast_ieee_rne_f_params(parse_format("bf16"))));  // man_bits 7
  CHECK_FALSE(fast_ieee_rne_product_coarse_ok(fast_ieee_rne_f_params(parse_format("e6m8"))));
  CHECK_FALSE(fast_ieee_rne_product_coarse_ok(fast_ieee_rne_f_params(parse_format("fp16"))));
  for (const char* name : {"e6m6", "bf16", "fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "e6m7"}) {
    INFO(name);
    const Format f = parse_format(name);
    const FastIeeeRneF p = fast_ieee_rne_f_params(f);
    REQUIRE(fast_ieee_rne_product_coarse_ok(p));
    std::mt19937_64 rng(13);
    std::normal_distribution<float> nd;
    FloatSource src(14);
    std::vector<float> as, bs;
    for (int i = 0; i < 60000; ++i) {
      as.push_back(nd(rng));
      bs.push_back(nd(rng));
    }
    for (int i = 0; i < 60000; ++i) {  // a b = 2^k (1 + t) and 2^k (1 - t), t down to 2^-30
      const float a = bits_float((static_cast<uint32_t>(rng()) & 0x007fffffu) | 0x3f800000u);
      const double t = std::ldexp(static_cast<double>(rng() % 4096), -22 - static_cast<int>(rng() % 9));
      as.push_back(a);
      bs.push_back(static_cast<float>((i % 2 ? 2.0 : 1.0) / a * (i % 4 < 2 ? 1 - t : 1 + t)));
    }
    for (double v : ieee_edge_values(f)) {  // ties and their neighbours
      if (!std::isfinite(v) || v == 0 || std::fabs(v) > 1e30 || std::fabs(v) < 1e-30) continue;
      for (float b : {1.0f, 3.0f, 0.75f, -5.0f, 1.0f / 1024, 1.5f + 0x1p-20f}) {
        as.push_back(static_cast<float>(v / b));
        bs.push_back(b);
      }
    }
    for (int i = 0; i < 60000; ++i) {
      as.push_back(i % 3 ? src.around(-60, 60) : bits_float(static_cast<uint32_t>(rng()) & 0x807fffffu));
      bs.push_back(i % 3 ? src.around(-60, 60) : src.around(80, 126));
    }
    size_t checked = 0;
    for (size_t i = 0; i < as.size(); ++i) {
      const float a = as[i], b = bs[i];
      const double x = static_cast<double>(a) * b;
      if ((float_bits(a * b) & 0x7f800000u) >= p.flag_bits ||
          (x != 0 && std::fabs(x) < std::ldexp(1.0, f.emin)) ||
          !(std::fabs(b) * static_cast<double>(p.scale) < 0x1p127) || !(std::fabs(a) < 0x1p127f))
        continue;  // outside the domain: flagged, below 2^emin, b 2^s or the coarse a not finite
      ++checked;
      const float ac = round_away_bits(a, kCoarseBitsA), bc = round_away_bits(b, kCoarseBitsB) * p.scale;
      const float ref = static_cast<float>(round_value(f, x));
      const float r = fast_ieee_rne_product_coarse_f(a, b, ac, bc);
      if (!same_bits(r, ref) && !(r == 0 && ref == 0))
        FAIL_CHECK("a=" << a << " b=" << b << " fast=" << r << " ref=" << ref);
      const v16f32 r16 = fast_ieee_rne_product_coarse_f(gemm_detail::BcastF{&a}, splat<v16f32>(b),
                                                        gemm_detail::BcastF{&ac}, splat<v16f32>(bc));
      const v8f32 r8 = fast_ieee_rne_product_coarse_f(splat<v8f32>(a), splat<v8f32>(b), splat<v8f32>(ac),
                                                      splat<v8f32>(bc));
      if (!same_bits(r16[5], r) || !same_bits(r8[3], r)) FAIL_CHECK("lanes: a=" << a << " b=" << b);
    }
    CHECK(checked > as.size() / 4);  // fp4_e2m1's narrow range: a third
  }
}

// The kernels hand the product forms an A element by its address
// (gemm_detail::BcastF: an embedded broadcast on AVX-512); the forms must give
// the bits they give for a vector holding it in every lane.
TEST_CASE("broadcast operands give the bits of their splat", "[gemm][fast_round]") {
  using gemm_detail::BcastF;
  FloatSource src(11);
  const FastIeeeRneF p = fast_ieee_rne_f_params(parse_format("e6m6"));
  // Lane by lane the same bits, or NaNs both (which operand's payload a NaN
  // result carries depends on the operand order the compiler chose for the
  // splat; the forms run on finite operands only).
  auto same = [](auto x, auto y) {
    for (int l = 0; l < static_cast<int>(sizeof x / sizeof(float)); ++l)
      if (!same_bits(x[l], y[l]) && !(std::isnan(x[l]) && std::isnan(y[l]))) return false;
    return true;
  };
  for (int i = 0; i < 4000; ++i) {
    // Any binary32 (specials included) for the multiply and the FMA; e6m6-like
    // operands for the forms, whose conditions the GEMM paths check.
    const float a = src.any(), s = src.short_value(-12, 12, 6);
    v16f32 b, c, t;
    for (int l = 0; l < 16; ++l) {
      b[l] = src.any();
      c[l] = src.any();
      t[l] = src.short_value(-12, 12, 6);
    }
    const v8f32 b8 = __builtin_shufflevector(b, b, 0, 1, 2, 3, 4, 5, 6, 7);
    const v8f32 c8 = __builtin_shufflevector(c, c, 0, 1, 2, 3, 4, 5, 6, 7);
    const v8f32 t8 = __builtin_shufflevector(t, t, 0, 1, 2, 3, 4, 5, 6, 7);
    const BcastF av{&a}, sv{&s};
    if (!same(av * b, splat<v16f32>(a) * b)) FAIL_CHECK("multiply, 16 lanes: a=" << a);
    if (!same(av * b8, splat<v8f32>(a) * b8)) FAIL_CHECK("multiply, 8 lanes: a=" << a);
    if (!same(gemm_detail::lane_fma(av, b, c), lane_fma(splat<v16f32>(a), b, c)))
      FAIL_CHECK("fma, 16 lanes: a=" << a);
    if (!same(gemm_detail::lane_fma(av, b8, c8), lane_fma(splat<v8f32>(a), b8, c8)))
      FAIL_CHECK("fma, 8 lanes: a=" << a);
    if (!same(fast_ieee_rne_product_normal_f(p, sv, t),
              fast_ieee_rne_product_normal_f(p, splat<v16f32>(s), t)))
      FAIL_CHECK("normal form: s=" << s);
    if (!same(fast_ieee_rne_product_short_f(p, sv, t), fast_ieee_rne_product_short_f(p, splat<v16f32>(s), t)))
      FAIL_CHECK("short form: s=" << s);
    if (!same(fast_ieee_rne_product_short_sub_f(p, sv, t),
              fast_ieee_rne_product_short_sub_f(p, splat<v16f32>(s), t)))
      FAIL_CHECK("short form with the clamp: s=" << s);
    if (!same(fast_ieee_rne_product_short_sub_f(p, sv, t8),
              fast_ieee_rne_product_short_sub_f(p, splat<v8f32>(s), t8)))
      FAIL_CHECK("short form with the clamp, 8 lanes: s=" << s);
  }
}

TEST_CASE("fast_ieee_d equals round_value for every input and non-stochastic mode", "[gemm][fast_round]") {
  const char* bases[] = {"e6m6",     "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "fp6_e2m3",
                         "fp4_e2m1", "e3m2", "fp32", "e5m0",     "e10m30"};
  const char* mods[] = {"", ":rtz", ":rup", ":rdn", ":rna", ":nosub", ":sat", ":rtz:nosub", ":rup:sat"};
  FloatSource src(3);
  std::vector<double> common;
  for (int i = 0; i < 60000; ++i) {
    common.push_back(static_cast<double>(src.around(-90, 40)) * src.around(-90, 40));
    common.push_back(static_cast<double>(src.any()) * src.any());
    common.push_back(bits_double(src.rng()));
  }
  for (const char* base : bases) {
    for (const char* mod : mods) {
      const std::string spec = std::string(base) + mod;
      INFO(spec);
      const Format f = parse_format(spec);
      REQUIRE(fast_ieee_d_supported(f));
      const FastIeeeD p = fast_ieee_d_params(f);
      std::vector<double> xs = common;
      const std::vector<double> edges = ieee_edge_values(f.man_bits <= 10 ? f : parse_format("e5m4"));
      xs.insert(xs.end(), edges.begin(), edges.end());
      for (size_t i = 0; i < xs.size(); ++i) {
        double r = 0;
        switch (f.rounding) {
          case Rounding::NearestEven:
            r = fast_ieee_d<Rounding::NearestEven>(p, xs[i]);
            break;
          case Rounding::TowardZero:
            r = fast_ieee_d<Rounding::TowardZero>(p, xs[i]);
            break;
          case Rounding::Up:
            r = fast_ieee_d<Rounding::Up>(p, xs[i]);
            break;
          case Rounding::Down:
            r = fast_ieee_d<Rounding::Down>(p, xs[i]);
            break;
          case Rounding::NearestAway:
            r = fast_ieee_d<Rounding::NearestAway>(p, xs[i]);
            break;
          case Rounding::Stochastic:
            break;
        }
        const double ref = round_value(f, xs[i]);
        if (!same_bits(r, ref)) FAIL_CHECK("x=" << xs[i] << " fast=" << r << " ref=" << ref);
      }
      // Vector lanes (RNE and RTZ suffice to exercise the vector instantiation).
      if (f.rounding == Rounding::NearestEven || f.rounding == Rounding::TowardZero) {
        for (size_t i = 0; i + 8 <= xs.size(); i += 8) {
          v8f64 v;
          for (int l = 0; l < 8; ++l) v[l] = xs[i + l];
          const v8f64 r = f.rounding == Rounding::NearestEven ? fast_ieee_d<Rounding::NearestEven>(p, v)
                                                              : fast_ieee_d<Rounding::TowardZero>(p, v);
          for (int l = 0; l < 8; ++l)
            if (!same_bits(r[l], round_value(f, xs[i + l]))) FAIL_CHECK("vector lane, x=" << xs[i + l]);
        }
      }
    }
  }
}

TEST_CASE("fast_ieee_rne_f32 equals quantize on binary32 inputs", "[gemm][fast_round]") {
  CHECK_FALSE(fast_ieee_rne_f32_supported(parse_format("e8m0")));
  for (const char* spec : {"bf16", "fp16", "e5m2", "fp8_e4m3", "fp8_e4m3:sat", "fp6_e2m3", "fp4_e2m1", "e5m0",
                           "e8m1", "e8m22", "e6m6", "fp16:nosub", "bf16:sat", "e3m1", "e7m3"}) {
    INFO(spec);
    const Format f = parse_format(spec);
    REQUIRE(fast_ieee_rne_f32_supported(f));
    const FastIeeeRneF32 p = fast_ieee_rne_f32_params(f);
    const bool lean = fast_ieee_rne_f32_lean_ok(f);
    std::vector<float> xs;
    // Every 997th bit pattern (all exponents, both signs; every 4985th in a
    // sanitizer build, tests/sanitized.h), the format's edges, random values.
    const uint64_t stride = 997 * static_cast<uint64_t>(emu::test::sanitized_stride(5));
    for (uint64_t u = 0; u < (1ull << 32); u += stride) xs.push_back(bits_float(static_cast<uint32_t>(u)));
    for (double v : ieee_edge_values(f.man_bits <= 10 ? f : parse_format("e5m4")))
      xs.push_back(static_cast<float>(v));
    FloatSource src(4);
    for (int i = 0; i < 100000; ++i) xs.push_back(src.any());
    for (float x : xs) {
      const float ref = quantize(f, x);
      const float r = fast_ieee_rne_f32(p, x);
      if (!same_bits(r, ref)) FAIL_CHECK("x=" << x << " fast=" << r << " ref=" << ref);
      if (lean) {
        const uint32_t a = float_bits(x) & 0x7fffffffu;
        const bool in_domain = a <= 0x7f800000u || a == 0x7fc00000u;
        const float rl = fast_ieee_rne_f32<false>(p, x);
        if (in_domain && !(std::isnan(ref) ? std::isnan(rl) : same_bits(rl, ref)))
          FAIL_CHECK("lean: x=" << x << " fast=" << rl << " ref=" << ref);
      }
    }
    for (size_t i = 0; i + 16 <= xs.size(); i += 16) {
      v16f32 v;
      for (int l = 0; l < 16; ++l) v[l] = xs[i + l];
      const v16f32 r = fast_ieee_rne_f32(p, v);
      for (int l = 0; l < 16; ++l)
        if (!same_bits(r[l], quantize(f, xs[i + l]))) FAIL_CHECK("vector lane, x=" << xs[i + l]);
    }
  }
}

TEST_CASE("fast_posit_rne_d equals round_value where it does not flag", "[gemm][fast_round]") {
  for (const char* spec : {"posit16_1", "posit16_0", "posit16_2", "posit8_0", "posit8_1", "posit8_2",
                           "posit12_1", "posit24_0", "posit10_3"}) {
    INFO(spec);
    const Format f = parse_format(spec);
    REQUIRE(fast_posit_rne_d_supported(f));
    const FastPositRneD p = fast_posit_rne_d_params(f);
    std::vector<double> xs;
    // Every code's value, its binary64 neighbours, and the tie points between
    // neighbouring codes (the n+1-bit posit 2c+1) with their neighbours.
    Format wider = f;
    wider.nbits = f.nbits + 1;
    const uint64_t codes = 1ull << f.nbits;
    const uint64_t step = codes > (1u << 16) ? codes >> 16 : 1;
    for (uint64_t c = 0; c < codes; c += step) {
      const double v = decode(f, c);
      const double t = decode(wider, 2 * c + 1);
      for (double x : {v, t})
        if (!std::isnan(x)) {
          xs.push_back(x);
          xs.push_back(std::nextafter(x, HUGE_VAL));
          xs.push_back(std::nextafter(x, -HUGE_VAL));
        }
    }
    FloatSource src(5);
    for (int i = 0; i < 200000; ++i) {
      xs.push_back(static_cast<double>(src.around(-20, 16)) * src.around(-20, 16));
      xs.push_back(static_cast<double>(src.short_value(-10, 10, 7)) * src.short_value(-10, 10, 7));
      xs.push_back(static_cast<double>(src.any()));
      xs.push_back(bits_double(src.rng()));
    }
    size_t checked = 0;
    for (double x : xs) {
      bool flag;
      const double r = fast_posit_rne_d(p, x, &flag);
      if (flag) continue;
      ++checked;
      const double ref = round_value(f, x);
      if (!same_bits(r, ref)) FAIL_CHECK("x=" << x << " fast=" << r << " ref=" << ref);
    }
    CHECK(checked > xs.size() / 8);
    for (size_t i = 0; i + 8 <= xs.size(); i += 8) {
      v8f64 v;
      for (int l = 0; l < 8; ++l) v[l] = xs[i + l];
      Mask8 flag;
      const v8f64 r = fast_posit_rne_d(p, v, &flag);
      for (int l = 0; l < 8; ++l) {
        bool scalar_flag;
        fast_posit_rne_d(p, xs[i + l], &scalar_flag);
#if defined(__AVX512F__)
        const bool lane_flag = (flag >> l) & 1;
#else
        const bool lane_flag = flag[l] != 0;
#endif
        if (lane_flag != scalar_flag) FAIL_CHECK("vector and scalar flags differ, x=" << xs[i + l]);
        if (!lane_flag && !same_bits(r[l], round_value(f, xs[i + l])))
          FAIL_CHECK("vector lane, x=" << xs[i + l]);
      }
    }
  }
}

namespace {

// Inputs for the posit rounding tests: products (a, b) of ties, their
// neighbours and codes (as x * 1) and random operands; sums (a, b) of random
// pairs of posit values.
struct PositTestInputs {
  std::vector<std::pair<float, float>> products, sums;
};
PositTestInputs posit_test_inputs(const Format& f) {
  PositTestInputs in;
  std::vector<float> values;
  Format wider = f;
  wider.nbits = f.nbits + 1;
  const uint64_t codes = 1ull << f.nbits;
  const uint64_t step = codes > (1u << 16) ? codes >> 16 : 1;
  for (uint64_t c = 0; c < codes; c += step) {
    const double v = decode(f, c), t = decode(wider, 2 * c + 1);
    if (std::isnan(v)) continue;
    values.push_back(static_cast<float>(v));
    for (double x : {v, t})
      for (float y : {static_cast<float>(x), std::nextafter(static_cast<float>(x), HUGE_VALF),
                      std::nextafter(static_cast<float>(x), -HUGE_VALF)})
        in.products.push_back({y, 1.0f});
  }
  FloatSource src(7);
  for (int i = 0; i < 150000; ++i) {
    in.products.push_back({src.around(-16, 12), src.around(-16, 12)});
    in.products.push_back({src.short_value(-8, 8, 7), src.short_value(-8, 8, 7)});
    in.products.push_back({src.any(), src.around(-40, 40)});
  }
  std::mt19937_64 rng(8);
  for (int i = 0; i < 300000; ++i)
    in.sums.push_back({values[rng() % values.size()], values[rng() % values.size()]});
  return in;
}

}  // namespace

TEST_CASE("posit rounding of exact products and of round-to-odd sums equals round_value",
          "[gemm][fast_round]") {
  for (const char* spec : {"posit16_1", "posit16_0", "posit16_2", "posit8_0", "posit8_1", "posit8_2",
                           "posit12_1", "posit24_0", "posit10_3", "posit20_1"}) {
    INFO(spec);
    const Format f = parse_format(spec);
    REQUIRE(fast_posit_rne_f_supported(f));
    const FastPositRneF p = fast_posit_rne_f_params(f);
    const PositTestInputs inputs = posit_test_inputs(f);
    const std::vector<std::pair<float, float>>& pairs = inputs.products;
    size_t checked = 0;
    for (int pass = 0; pass < 2; ++pass) {  // products (fast_posit_rne_product_f), then sums of posit values
      const std::vector<std::pair<float, float>>& in = pass ? inputs.sums : inputs.products;
      for (size_t i = 0; i + 16 <= in.size(); i += 16) {
        v16f32 va, vb;
        for (int l = 0; l < 16; ++l) {
          va[l] = in[i + l].first;
          vb[l] = in[i + l].second;
        }
        // Vectors look C up in the table where the format has one; scalars compute it.
        const LaneTable64 table(p.c_high);
        const LaneTable64* tp = p.has_table ? &table : nullptr;
        Mask16 vflag;
        const v16f32 vr = pass ? fast_posit_rne_f(p, lane_sum_rto(va, vb), &vflag, tp)
                               : fast_posit_rne_product_f(p, va, vb, &vflag, tp);
        for (int l = 0; l < 16; ++l) {
          const float a = in[i + l].first, b = in[i + l].second;
          bool flag;
          const float r = pass ? fast_posit_rne_f(p, lane_sum_rto(a, b), &flag)
                               : fast_posit_rne_product_f(p, a, b, &flag);
          if (p.has_table && !flag) {  // the scalar lookup gives the same
            bool tflag;
            const float rt = pass ? fast_posit_rne_f(p, lane_sum_rto(a, b), &tflag, p.c_high)
                                  : fast_posit_rne_product_f(p, a, b, &tflag, p.c_high);
            if (!same_bits(rt, r)) FAIL_CHECK("scalar table lookup differs, a=" << a << " b=" << b);
          }
#if defined(__AVX512F__)
          const bool lane_flag = (vflag >> l) & 1;
#else
          const bool lane_flag = vflag[l] != 0;
#endif
          if (lane_flag != flag) FAIL_CHECK("vector and scalar flags differ, a=" << a << " b=" << b);
          if (flag) continue;
          ++checked;
          const Exact x = pass ? exact_add(a, b, false) : exact_mul(a, b);
          const float ref = static_cast<float>(round_exact(f, x, 0));
          if (!same_bits(r, ref) || !same_bits(vr[l], ref))
            FAIL_CHECK((pass ? "sum" : "product")
                       << " a=" << a << " b=" << b << " fast=" << r << " vector=" << vr[l] << " ref=" << ref);
        }
      }
    }
    CHECK(checked > pairs.size() / 4);
  }
}

// The poison forms (fast_posit_rne_poison_f, fast_posit_rne_product_poison_f):
// inputs whose binary32 value (the product's, or the round-to-odd sum's) has
// its exponent field in [lo, hi] (or is zero) round as round_value; the rest of
// the served window [w.lo, w.hi] gives NaN. Vectors by vpermi2w (AVX-512 BW),
// scalars by lane_lookup_both16 (the same low half).
TEST_CASE(
    "posit poison forms equal round_value inside the grid binades and give NaN in the rest of the window",
    "[gemm][fast_round]") {
  for (const char* spec : {"posit16_1", "posit16_0", "posit8_0", "posit8_1", "posit8_2", "posit12_1"}) {
    INFO(spec);
    const Format f = parse_format(spec);
    const FastPositRneF p = fast_posit_rne_f_params(f);
    REQUIRE(fast_posit_poison_supported(p));
    const FastPositPoison w = fast_posit_poison_params(p);
    CHECK(w.hi - w.lo == p.hi - p.lo + 2 * (63 - (p.hi - p.lo)));
    if (std::string(spec) == "posit16_1") CHECK((w.lo == 87 && w.hi == 166));
    // What poison_sums_ok assumes: every posit is a multiple of minpos.
    for (uint64_t c = 0; c < (1ull << f.nbits); ++c) {
      const double v = decode(f, c);
      if (!std::isnan(v) && std::fmod(v, f.min_positive) != 0) FAIL_CHECK("code " << c << " = " << v);
    }
    const LaneTable64 table(w.c_high);
    const PositTestInputs inputs = posit_test_inputs(f);
    size_t rounded = 0, poisoned = 0;
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<std::pair<float, float>> in = pass ? inputs.sums : inputs.products;
      // Also operands that reach the window's ends: products of 2^[-24, 24) values, sums with large ones.
      FloatSource src(9);
      for (int i = 0; i < 100000; ++i)
        in.push_back(pass ? std::pair{static_cast<float>(round_value(f, src.around(-30, 30), 0)),
                                      static_cast<float>(round_value(f, src.around(-30, 30), 0))}
                          : std::pair{src.around(-24, 24), src.around(-24, 24)});
      for (size_t i = 0; i + 16 <= in.size(); i += 16) {
        v16f32 va, vb;
        for (int l = 0; l < 16; ++l) {
          va[l] = in[i + l].first;
          vb[l] = in[i + l].second;
        }
        const v16f32 vr = pass ? fast_posit_rne_poison_f(&table, lane_sum_rto(va, vb))
                               : fast_posit_rne_product_poison_f(&table, va, vb);
        for (int l = 0; l < 16; ++l) {
          const float a = in[i + l].first, b = in[i + l].second;
          const float x = pass ? lane_sum_rto(a, b) : a * b;
          const float r =
              pass ? fast_posit_rne_poison_f(w.c_high, x) : fast_posit_rne_product_poison_f(w.c_high, a, b);
          const uint32_t e = (float_bits(x) >> 23) & 0xff;
          if (!same_bits(r, vr[l])) FAIL_CHECK("scalar and vector differ, a=" << a << " b=" << b);
          const bool zero = pass ? x == 0 : (a == 0 || b == 0);  // an underflowing product: e = 0, not served
          if (zero || (e >= p.lo && e <= p.hi)) {
            ++rounded;
            const Exact ex = pass ? exact_add(a, b, false) : exact_mul(a, b);
            const float ref = static_cast<float>(round_exact(f, ex, 0));
            if (!same_bits(r, ref)) FAIL_CHECK("a=" << a << " b=" << b << " fast=" << r << " ref=" << ref);
          } else if (e >= w.lo && e <= w.hi) {
            ++poisoned;
            if (!std::isnan(r)) FAIL_CHECK("not poisoned: a=" << a << " b=" << b << " fast=" << r);
          }
        }
      }
    }
    CHECK(rounded > 100000);
    CHECK(poisoned > 1000);
  }
}

// ---------------------------------------------------------------------------
// The GEMM vs mac_reduce per output

namespace {

MacPolicy policy(const std::string& mul, const std::string& acc, const std::string& out = "fp32",
                 int chunk = 0, const std::string& outer = "fp32") {
  MacPolicy p;
  p.mul_exact = mul == "exact";
  p.mul = parse_format(mul == "exact" ? "fp32" : mul);
  p.acc = parse_format(acc);
  p.out = parse_format(out);
  p.chunk = chunk;
  p.acc_outer = parse_format(outer);
  return p;
}

// C[i][j] = mac_reduce(row i of A, column j of B), written independently of gemm.cpp.
std::vector<float> reference(const MacPolicy& p, const std::vector<float>& A, int64_t lda,
                             const std::vector<float>& B, int64_t ldb, int64_t M, int64_t N, int64_t K,
                             const float* bias, const GemmDraws& d) {
  std::vector<float> C(static_cast<size_t>(M * N));
  std::vector<float> col(static_cast<size_t>(K));
  const uint64_t sites = 2 * static_cast<uint64_t>(K) +
                         (p.chunk > 0 && K > 0 ? static_cast<uint64_t>((K + p.chunk - 1) / p.chunk) : 1) + 2;
  for (int64_t j = 0; j < N; ++j) {
    for (int64_t k = 0; k < K; ++k) col[k] = B[k * ldb + j];
    for (int64_t i = 0; i < M; ++i) {
      const uint64_t o = static_cast<uint64_t>(i * N + j);
      auto draw = [&](uint64_t site) { return philox_draw(d.seed, d.stream, o * sites + site); };
      C[i * N + j] = static_cast<float>(
          mac_reduce(p, A.data() + i * lda, col.data(), K, bias ? bias + j : nullptr, draw));
    }
  }
  return C;
}

enum class Data {
  Normal,
  Wide,
  Specials,
  Int8,
  Fixed4,
  Sparse,
  Tiny,
  Short,
  ShortTiny,
  ShortSpots,
  Window,
  Edges,
  Huge,
  Big
};

std::vector<float> make_matrix(std::mt19937_64& rng, int64_t rows, int64_t ld, Data kind) {
  std::vector<float> x(static_cast<size_t>(rows * ld));
  std::normal_distribution<float> nd;
  FloatSource src(rng());
  for (size_t i = 0; i < x.size(); ++i) {
    switch (kind) {
      case Data::Normal:
        x[i] = nd(rng);
        break;
      case Data::Wide:
        x[i] = rng() % 7 == 0 ? 0.0f : src.around(-40, 17);
        break;
      case Data::Specials:
        switch (rng() % 24) {
          case 0:
            x[i] = std::numeric_limits<float>::infinity();
            break;
          case 1:
            x[i] = -std::numeric_limits<float>::infinity();
            break;
          case 2:
            x[i] = std::numeric_limits<float>::quiet_NaN();
            break;
          case 3:
            x[i] = 0.0f;
            break;
          case 4:
            x[i] = -0.0f;
            break;
          case 5:
            x[i] = bits_float(static_cast<uint32_t>(rng()) & 0x807fffffu);
            break;
          case 6:
            x[i] = src.around(100, 127);
            break;
          default:
            x[i] = nd(rng);
        }
        break;
      case Data::Int8:
        x[i] = static_cast<float>(static_cast<int>(rng() % 256) - 128);
        break;
      case Data::Fixed4:
        x[i] = static_cast<float>(static_cast<int>(rng() % 256) - 128) / 16.0f;
        break;
      case Data::Sparse:
        x[i] = rng() % 3 ? 0.0f : (rng() % 2 ? -0.0f : nd(rng));
        break;
      case Data::Tiny:
        x[i] = src.around(-60, -10);
        break;
      case Data::Short:  // 7 significant bits (e6m6's), what short formats give the GEMM in training
        x[i] = bits_float(float_bits(nd(rng)) & 0xfffe0000u);
        break;
      case Data::ShortTiny:  // the same over 2^[-45, 5): some products below 2^emin of mul
        x[i] = bits_float(float_bits(src.around(-45, 5)) & 0xfffe0000u);
        break;
      case Data::ShortSpots:  // Short, but one in 300 over 2^[-40, -25): e6m6 products below 2^-30 at
                              // about a tenth of a tile's steps k, between runs of steps without any
        x[i] = bits_float(float_bits(rng() % 300 ? nd(rng) : src.around(-40, -25)) & 0xfffe0000u);
        break;
      case Data::Window:  // posit16_1's poison window: products below 2^-24, sums from 2^24 on
        switch (rng() % 8) {
          case 0:
            x[i] = 0.0f;
            break;
          case 1:
            x[i] = src.around(-20, -8);
            break;
          case 2:
            x[i] = src.around(6, 12);
            break;
          default:
            x[i] = nd(rng);
        }
        break;
      case Data::Edges:  // products beyond posit16_1's window on either side, and inside it
        switch (rng() % 4) {
          case 0:
            x[i] = src.around(-70, -30);
            break;
          case 1:
            x[i] = src.around(15, 40);
            break;
          default:
            x[i] = nd(rng);
        }
        break;
      case Data::Huge:  // products from 2^49 on (beyond posit16_1's window, not poisoned), none below it
        x[i] = rng() % 4 ? nd(rng) : src.around(50, 55);
        break;
      case Data::Big:  // sums of many products near 2^28: beyond posit10_3's window
        x[i] = src.around(12, 15);
        break;
    }
  }
  return x;
}

struct Shape {
  int64_t M, N, K;
};

// Runs mac_gemm on several shapes, thread counts, leading dimensions, with and
// without bias, and compares every output bit with the reference. `expect` is
// the path that must run (Generic is also run explicitly).
void check_gemm(const MacPolicy& p, GemmPath expect, Data da, Data db, uint64_t seed,
                std::vector<Shape> shapes = {{1, 1, 1},
                                             {1, 37, 5},
                                             {5, 1, 9},
                                             {7, 33, 1},
                                             {13, 47, 29},
                                             {4, 32, 256},
                                             {9, 70, 300},
                                             {3, 17, 520},
                                             {2, 530, 3}},
                GemmDraws draws = {}) {
  std::mt19937_64 rng(seed);
  int variant = 0;
  for (const Shape& s : shapes) {
    for (int threads = 1; threads <= 3; ++threads, ++variant) {
      const bool with_bias = variant % 2 == 1;
      const int64_t lda = s.K + variant % 3, ldb = s.N + (variant / 2) % 3, ldc = s.N + variant % 2;
      const std::vector<float> A = make_matrix(rng, s.M, lda, da);
      const std::vector<float> B = make_matrix(rng, s.K, ldb, db);
      const std::vector<float> bias = make_matrix(rng, 1, s.N, Data::Normal);
      const float* bp = with_bias ? bias.data() : nullptr;
      const std::vector<float> ref = reference(p, A, lda, B, ldb, s.M, s.N, s.K, bp, draws);
      for (bool generic : {false, true}) {
        INFO("M=" << s.M << " N=" << s.N << " K=" << s.K << " threads=" << threads << " bias=" << with_bias
                  << " generic=" << generic);
        std::vector<float> C(static_cast<size_t>(s.M * ldc), 12345.0f);
        const GemmPath ran = mac_gemm_run(p, A.data(), lda, B.data(), ldb, C.data(), ldc, s.M, s.N, s.K, bp,
                                          draws, threads, generic);
        CHECK(std::string(gemm_path_name(ran)) == gemm_path_name(generic ? GemmPath::Generic : expect));
        size_t bad = 0;
        for (int64_t i = 0; i < s.M; ++i) {
          if (std::memcmp(C.data() + i * ldc, ref.data() + i * s.N, static_cast<size_t>(s.N) * 4) != 0) ++bad;
          for (int64_t j = s.N; j < ldc; ++j)
            if (C[i * ldc + j] != 12345.0f) FAIL_CHECK("wrote past column N in row " << i);
        }
        CHECK(bad == 0);
      }
    }
  }
}

}  // namespace

TEST_CASE("mac_site_count is 2K + chunks + 2", "[gemm]") {
  CHECK(mac_site_count(0, 0) == 3);
  CHECK(mac_site_count(10, 0) == 23);
  CHECK(mac_site_count(10, 3) == 26);
  CHECK(mac_site_count(9, 3) == 23);
  CHECK(mac_site_count(0, 4) == 3);
}

TEST_CASE("policies pick the fast paths", "[gemm]") {
  CHECK(gemm_policy_path(policy("fp32", "fp32")) == GemmPath::Fp32);
  CHECK(gemm_policy_path(policy("e6m6", "fp32")) == GemmPath::MulFmaF32);
  CHECK(gemm_policy_path(policy("bf16", "fp32")) == GemmPath::MulFmaF32);
  CHECK(gemm_policy_path(policy("e8m22", "fp32")) == GemmPath::MulRneF32);
  CHECK(gemm_policy_path(policy("e6m6:rtz", "fp32")) == GemmPath::MulIeeeF32);
  CHECK(gemm_policy_path(policy("bf16", "bf16")) == GemmPath::AccIeee);
  CHECK(gemm_policy_path(policy("fp16", "fp16")) == GemmPath::AccIeee);
  CHECK(gemm_policy_path(policy("exact", "int32")) == GemmPath::Int);
  CHECK(gemm_policy_path(policy("posit16_1", "posit16_1")) == GemmPath::Posit);
  CHECK(gemm_policy_path(policy("posit8_0", "posit16_1")) == GemmPath::Posit);
  CHECK(gemm_policy_path(policy("posit16_1:rtz", "posit16_1")) == GemmPath::Generic);
  CHECK(gemm_policy_path(policy("exact", "fp32")) == GemmPath::Generic);
  CHECK(gemm_policy_path(policy("e6m6:sr", "fp32")) == GemmPath::Generic);
  CHECK(gemm_policy_path(policy("fp32", "bf16")) == GemmPath::Generic);  // 24-bit products into bf16
  CHECK(gemm_policy_path(policy("bf16", "bf16:rtz")) == GemmPath::Generic);
}

TEST_CASE("generic path equals mac_reduce, stochastic rounding included", "[gemm]") {
  const GemmDraws d{0x1234abcdull, 7};
  const std::vector<Shape> shapes = {{1, 1, 1}, {3, 5, 7}, {6, 9, 13}, {2, 3, 0}};
  check_gemm(policy("e6m6:sr", "bf16:sr", "fp16:sr"), GemmPath::Generic, Data::Normal, Data::Normal, 1,
             shapes, d);
  check_gemm(policy("exact", "e5m7:sr", "fp32", 4, "bf16:sr"), GemmPath::Generic, Data::Normal, Data::Normal,
             2, shapes, d);
  check_gemm(policy("posit8_1", "posit16_1:rtz", "posit8_0"), GemmPath::Generic, Data::Specials, Data::Normal,
             3, shapes, d);
  check_gemm(policy("exact", "fp32"), GemmPath::Generic, Data::Specials, Data::Specials, 4, shapes, d);
}

TEST_CASE("fast path (a) fp32 pass-through equals mac_reduce", "[gemm]") {
  check_gemm(policy("fp32", "fp32"), GemmPath::Fp32, Data::Normal, Data::Normal, 10);
  check_gemm(policy("fp32", "fp32"), GemmPath::Fp32, Data::Wide, Data::Sparse, 11);
  check_gemm(policy("fp32", "fp32", "bf16", 5), GemmPath::Fp32, Data::Normal, Data::Wide, 12);
  check_gemm(policy("fp32", "fp32", "fp32", 64), GemmPath::Fp32, Data::Normal, Data::Normal, 13);
  check_gemm(policy("fp32", "fp32", "fp32", 300), GemmPath::Fp32, Data::Normal, Data::Normal, 15,
             {{3, 17, 520}});
  // Non-finite operands go to the generic path (Inf * 0 must be skipped, not NaN).
  check_gemm(policy("fp32", "fp32"), GemmPath::Generic, Data::Specials, Data::Normal, 14,
             {{3, 20, 30}, {5, 40, 9}});
}

// One Inf or NaN anywhere sends fp32 to the generic path, also where the finiteness scan splits
// the operand's rows over threads (500 rows of 300: two parts of 250).
TEST_CASE("fast path (a) finds a single non-finite operand in any row", "[gemm]") {
  const int64_t M = 500, N = 24, K = 300;
  std::mt19937_64 rng(16);
  std::vector<float> A = make_matrix(rng, M, K, Data::Normal), B = make_matrix(rng, K, N, Data::Normal);
  std::vector<float> C(static_cast<size_t>(M * N));
  const MacPolicy p = policy("fp32", "fp32");
  for (int threads = 1; threads <= 3; ++threads) {
    CHECK(mac_gemm_run(p, A.data(), K, B.data(), N, C.data(), N, M, N, K, nullptr, {}, threads) ==
          GemmPath::Fp32);
    for (int64_t row : {int64_t{0}, int64_t{249}, int64_t{250}, int64_t{333}, M - 1}) {
      for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
        INFO("threads " << threads << ", A row " << row << " holds " << bad);
        float& x = A[static_cast<size_t>(row * K + (row * 7) % K)];
        const float saved = x;
        x = bad;
        CHECK(mac_gemm_run(p, A.data(), K, B.data(), N, C.data(), N, M, N, K, nullptr, {}, threads) ==
              GemmPath::Generic);
        x = saved;
      }
    }
  }
  // Finite operands whose sums overflow: Inf accumulators, but the fp32 kernel's outputs stand.
  for (int64_t i = 0; i < K; ++i) A[static_cast<size_t>(7 * K + i)] = 3e38f;
  const std::vector<float> want = reference(p, A, K, B, N, M, N, K, nullptr, {});
  for (int threads = 1; threads <= 3; ++threads) {
    INFO("overflow, threads " << threads);
    std::fill(C.begin(), C.end(), 0.0f);
    CHECK(mac_gemm_run(p, A.data(), K, B.data(), N, C.data(), N, M, N, K, nullptr, {}, threads) ==
          GemmPath::Fp32);
    CHECK(!std::isfinite(C[static_cast<size_t>(7 * N)]));  // Inf, or NaN from Inf - Inf
    CHECK(std::memcmp(C.data(), want.data(), C.size() * sizeof(float)) == 0);
  }
}

// Shapes over several row groups and row tasks, with a last group of 6 rows:
// M = 64 and 70 take the 16-row fp32 tile on AVX-512, M = 6 and 24 the 8-row one
// (gemm.cpp run_fp32); the 8-row tiles of (b), (d) and bf16 (c) run 9, 8, 1 and 3 groups. M = 40
// over 260 columns takes one task over all rows with 1 and 2 threads (gemm.cpp all_rows), row
// tasks with 3; M = 520 is past all_rows' rows.
TEST_CASE("fast paths over several row groups and tasks equal mac_reduce", "[gemm]") {
  const std::vector<Shape> shapes = {{70, 35, 300}, {64, 40, 257},  {6, 41, 30},
                                     {24, 33, 20},  {40, 260, 257}, {520, 260, 9}};
  check_gemm(policy("fp32", "fp32"), GemmPath::Fp32, Data::Normal, Data::Normal, 40, shapes);
  check_gemm(policy("fp32", "fp32", "bf16", 7), GemmPath::Fp32, Data::Wide, Data::Sparse, 41, shapes);
  check_gemm(policy("e6m6", "fp32"), GemmPath::MulFmaF32, Data::Normal, Data::Normal, 42, shapes);
  check_gemm(policy("e6m6", "fp32"), GemmPath::MulFmaF32, Data::Tiny, Data::Wide, 43, shapes);
  check_gemm(policy("bf16", "bf16"), GemmPath::AccIeee, Data::Normal, Data::Normal, 44, shapes);
  check_gemm(policy("e6m6", "fp32"), GemmPath::MulFmaF32, Data::Short, Data::Short, 47, shapes);
  check_gemm(policy("e6m6", "fp32"), GemmPath::MulFmaF32, Data::ShortTiny, Data::ShortTiny, 49, shapes);
  // Tiles whose steps k take Form::Short and Form::ShortSub by turns (Form::ShortSteps).
  check_gemm(policy("e6m6", "fp32"), GemmPath::MulFmaF32, Data::ShortSpots, Data::ShortSpots, 50, shapes);
  check_gemm(policy("fp8_e4m3", "fp16"), GemmPath::AccIeee, Data::ShortSpots, Data::Short, 51, shapes);
  check_gemm(policy("fp8_e4m3", "fp16"), GemmPath::AccIeee, Data::Short, Data::Short, 48, shapes);
  check_gemm(policy("exact", "int32"), GemmPath::Int, Data::Int8, Data::Int8, 45, shapes);
  check_gemm(policy("posit16_1", "posit16_1"), GemmPath::Posit, Data::Normal, Data::Normal, 46, shapes);
}

TEST_CASE("fast path (b) IEEE-like products into fp32 equal mac_reduce", "[gemm]") {
  for (const char* mul :
       {"e6m6", "fp16", "fp8_e4m3", "fp8_e5m2", "e5m10:sat", "fp4_e2m1", "bf16", "tf32", "e8m1", "e8m21"}) {
    INFO(mul);
    check_gemm(policy(mul, "fp32"), GemmPath::MulFmaF32, Data::Normal, Data::Normal, 20);
    check_gemm(policy(mul, "fp32", "fp16", 7), GemmPath::MulFmaF32, Data::Wide, Data::Sparse, 21,
               {{5, 37, 41}, {9, 70, 300}});
    check_gemm(policy(mul, "fp32"), GemmPath::MulFmaF32, Data::Specials, Data::Specials, 22,
               {{5, 37, 41}, {3, 17, 300}});
    check_gemm(policy(mul, "fp32"), GemmPath::MulFmaF32, Data::Tiny, Data::Wide, 23, {{5, 37, 41}});
    // 7-bit operands: the short paths where 14 <= 23 - man_bits (e6m6, bf16, fp8, ...).
    check_gemm(policy(mul, "fp32"), GemmPath::MulFmaF32, Data::Short, Data::Short, 36);
    check_gemm(policy(mul, "fp32"), GemmPath::MulFmaF32, Data::ShortTiny, Data::Short, 37);
    check_gemm(policy(mul, "fp32"), GemmPath::MulFmaF32, Data::Short, Data::ShortSpots, 38);
  }
  // Stochastic rounding in the epilogue (promotions, bias, output) of a fast path.
  check_gemm(policy("e6m6", "fp32", "bf16:sr", 7, "bf16:sr"), GemmPath::MulFmaF32, Data::Normal, Data::Wide,
             35, {{5, 37, 41}, {3, 17, 300}}, GemmDraws{0xfeed, 11});
  for (const char* mul : {"e8m22", "e5m23", "e7m22:sat"}) {
    INFO(mul);
    check_gemm(policy(mul, "fp32"), GemmPath::MulRneF32, Data::Normal, Data::Normal, 24);
    check_gemm(policy(mul, "fp32", "fp32", 3), GemmPath::MulRneF32, Data::Specials, Data::Wide, 25,
               {{5, 37, 41}, {3, 17, 300}});
    check_gemm(policy(mul, "fp32"), GemmPath::MulRneF32, Data::Tiny, Data::Tiny, 26, {{5, 37, 41}});
  }
  for (const char* mul :
       {"e6m6:rtz", "bf16:rup", "fp16:rdn", "fp8_e4m3:rna", "e6m6:nosub", "bf16:rtz:nosub"}) {
    INFO(mul);
    check_gemm(policy(mul, "fp32"), GemmPath::MulIeeeF32, Data::Normal, Data::Wide, 27);
    check_gemm(policy(mul, "fp32", "fp32", 16), GemmPath::MulIeeeF32, Data::Tiny, Data::Wide, 28,
               {{5, 37, 41}});
    check_gemm(policy(mul, "fp32"), GemmPath::Generic, Data::Specials, Data::Normal, 29, {{3, 20, 30}});
  }
}

// The epilogue that rounds binary32 sums (plus the bias) into out a vector of
// lanes at a time, in every mode but :sr, with overflow, :sat and :nosub.
TEST_CASE("fast paths round into an IEEE-like output format as mac_reduce", "[gemm]") {
  for (const char* out :
       {"e6m6", "bf16:rtz", "fp16:rup", "fp8_e4m3:rdn", "e5m2:rna", "bf16:sat", "fp16:nosub", "fp32:rtz"}) {
    INFO("out " << out);
    check_gemm(policy("e6m6", "fp32", out), GemmPath::MulFmaF32, Data::Normal, Data::Wide, 34);
    check_gemm(policy("fp32", "fp32", out), GemmPath::Fp32, Data::Wide, Data::Normal, 35, {{5, 37, 41}});
    check_gemm(policy("e6m6", "fp32", out), GemmPath::MulFmaF32, Data::Specials, Data::Normal, 36,
               {{5, 37, 41}, {3, 17, 300}});
  }
}

TEST_CASE("fast path (c) short IEEE-like accumulators equal mac_reduce", "[gemm]") {
  for (auto [mul, acc] : {std::pair{"bf16", "bf16"},
                          {"fp16", "fp16"},
                          {"fp8_e4m3", "fp16"},
                          {"fp8_e5m2", "fp16"},
                          {"e5m2", "e5m2"},
                          {"e8m3", "bf16"}}) {
    INFO(mul << " / " << acc);
    check_gemm(policy(mul, acc), GemmPath::AccIeee, Data::Normal, Data::Normal, 30);
    check_gemm(policy(mul, acc, "fp32", 8, "bf16"), GemmPath::AccIeee, Data::Wide, Data::Sparse, 31,
               {{5, 37, 41}, {9, 70, 300}});
    check_gemm(policy(mul, acc), GemmPath::AccIeee, Data::Specials, Data::Specials, 32,
               {{5, 37, 41}, {3, 17, 300}});
    check_gemm(policy(mul, acc, acc), GemmPath::AccIeee, Data::Tiny, Data::Wide, 33, {{5, 37, 41}});
    check_gemm(policy(mul, acc), GemmPath::AccIeee, Data::Short, Data::Short, 34);
    check_gemm(policy(mul, acc), GemmPath::AccIeee, Data::Short, Data::ShortTiny, 35);
  }
}

// KernBf16's normal path (AVX-512 BF16) converts with vcvtne2ps2bf16, which
// flushes subnormals; its conditions keep every sum it converts normal. Two
// cases where a flushing conversion would give -0 or +0 for a bf16 subnormal:
//   - the first k block (products of -2^-127, bf16 subnormals, off the normal
//     path) leaves -2^-127 in every accumulator; the second block's products
//     (+-2^-119, which qualify for the normal path) take it to 255 * 2^-127 and
//     back to -2^-127: the normal path may start only from accumulators on the
//     2^-126 grid;
//   - products of normal binary32 magnitude 2^-125 (1 + 2^-7) and -2^-125 sum
//     to 2^-132: products below 2^-119 stay off the normal path.
TEST_CASE("fast path (c) bf16 sums in the subnormal range", "[gemm]") {
  struct Term {
    int64_t k;
    float a, b;
  };
  const std::vector<std::pair<std::vector<Term>, float>> cases = {
      {{{3, -0x1p-64f, 0x1p-63f}, {300, 0x1p-60f, 0x1p-59f}, {301, -0x1p-60f, 0x1p-59f}}, -0x1p-127f},
      {{{10, 0x1.02p-63f, 0x1p-62f}, {11, -0x1p-63f, 0x1p-62f}}, 0x1p-132f},
  };
  const int64_t M = 8, N = 32, K = 512;
  for (const auto& [terms, sum] : cases) {
    for (int threads = 1; threads <= 3; ++threads) {
      INFO("sum " << sum << " threads " << threads);
      std::vector<float> A(static_cast<size_t>(M * K), 0.0f), B(static_cast<size_t>(K * N), 0.0f);
      for (const Term& t : terms) {
        for (int64_t i = 0; i < M; ++i) A[i * K + t.k] = t.a;
        for (int64_t j = 0; j < N; ++j) B[t.k * N + j] = t.b;
      }
      const MacPolicy p = policy("bf16", "bf16");
      const std::vector<float> ref = reference(p, A, K, B, N, M, N, K, nullptr, {});
      std::vector<float> C(static_cast<size_t>(M * N));
      const GemmPath ran =
          mac_gemm_run(p, A.data(), K, B.data(), N, C.data(), N, M, N, K, nullptr, {}, threads, false);
      CHECK(ran == GemmPath::AccIeee);
      CHECK(ref[0] == sum);  // the reference's own sum
      CHECK(std::memcmp(C.data(), ref.data(), C.size() * 4) == 0);
    }
  }
}

// KernBf16's short form multiplies in binary32 and converts: exact only for
// operands of at most 24 significant bits together. Here binary32 operands of 24
// bits each whose product 0x1.38283p+0 x 0x1.69aa08p+0 rounds in binary32 onto a
// bf16 tie (found by a search over random pairs: 1 in 200,000): R_bf16 of the
// exact product is 1.7265625, of the binary32 product 1.71875.
TEST_CASE("fast path (c) bf16 products of 24-bit operands are rounded once", "[gemm]") {
  const int64_t M = 16, N = 64, K = 3;
  std::vector<float> A(static_cast<size_t>(M * K), 0.0f), B(static_cast<size_t>(K * N), 0.0f);
  for (int64_t i = 0; i < M; ++i) A[i * K + 1] = 0x1.38283p+0f;
  for (int64_t j = 0; j < N; ++j) B[1 * N + j] = 0x1.69aa08p+0f;
  const MacPolicy p = policy("bf16", "bf16");
  const std::vector<float> ref = reference(p, A, K, B, N, M, N, K, nullptr, {});
  CHECK(ref[0] == 1.7265625f);
  for (int threads = 1; threads <= 3; ++threads) {
    std::vector<float> C(static_cast<size_t>(M * N));
    CHECK(mac_gemm_run(p, A.data(), K, B.data(), N, C.data(), N, M, N, K, nullptr, {}, threads, false) ==
          GemmPath::AccIeee);
    CHECK(std::memcmp(C.data(), ref.data(), C.size() * 4) == 0);
  }
}

TEST_CASE("fast path (d) integer operands with exact products equal mac_reduce", "[gemm]") {
  check_gemm(policy("exact", "int32"), GemmPath::Int, Data::Int8, Data::Int8, 40);
  check_gemm(policy("exact", "int32", "bf16", 9), GemmPath::Int, Data::Int8, Data::Int8, 41);
  check_gemm(policy("exact", "fixed32_8"), GemmPath::Int, Data::Fixed4, Data::Fixed4, 42);
  check_gemm(policy("int16", "int32:wrap"), GemmPath::Int, Data::Int8, Data::Int8, 43);
  check_gemm(policy("fp32", "int32:sr", "fp16:sr"), GemmPath::Int, Data::Int8, Data::Int8, 44,
             {{5, 37, 41}, {3, 17, 300}}, GemmDraws{99, 3});
  check_gemm(policy("exact", "int16"), GemmPath::Int, Data::Int8, Data::Int8, 45, {{5, 37, 1}});
  // Data that is not integer-valued, or sums that could saturate, or products
  // the accumulator would round: the generic path.
  check_gemm(policy("exact", "int32"), GemmPath::Generic, Data::Normal, Data::Int8, 46, {{5, 37, 41}});
  check_gemm(policy("exact", "int16"), GemmPath::Generic, Data::Int8, Data::Int8, 47, {{5, 37, 41}});
  check_gemm(policy("exact", "int32"), GemmPath::Generic, Data::Fixed4, Data::Int8, 48, {{5, 37, 41}});
}

// Path (d)'s data check, against its definition in binary64 arithmetic: the
// smallest f >= 0 with x 2^f an integer, per element, searched one f at a time.
TEST_CASE("gemm_integer_scan finds the smallest common fraction and the largest integer", "[gemm]") {
  struct Expected {
    bool ok;
    int frac;
    double max_int;
  };
  auto reference = [](const std::vector<float>& x) {
    int need = 0;
    double max_abs = 0.0;
    for (float v : x) {
      if (!std::isfinite(v)) return Expected{false, 0, 0.0};
      int f = 0;
      while (std::ldexp(static_cast<double>(v), f) != std::trunc(std::ldexp(static_cast<double>(v), f))) ++f;
      need = std::max(need, f);
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(v)));
    }
    const double max_int = std::ldexp(max_abs, need);
    return Expected{need <= 64 && max_int <= 32767.0, need, max_int};
  };
  std::mt19937_64 rng(77);
  auto element = [&]() -> float {
    switch (rng() % 12) {
      case 0:
        return 0.0f;
      case 1:
        return std::ldexp(1.0f, -149 + static_cast<int>(rng() % 30));  // subnormals
      case 2:
        return -std::ldexp(static_cast<float>(rng() % 0x7fffff), -149);
      case 3:
        return static_cast<float>(rng() % 3 == 0 ? 32767 : 32768) * (rng() % 2 ? 1.0f : -1.0f);
      case 4:  // integers at the edge of the range, also on fine grids
        return std::ldexp(static_cast<float>(32760 + static_cast<int>(rng() % 10)),
                          -static_cast<int>(rng() % 80));
      default: {  // small integers on a grid 2^-s, s from -4 to 75
        const int i = static_cast<int>(rng() % 512) - 256;
        return std::ldexp(static_cast<float>(i), static_cast<int>(rng() % 80) - 75);
      }
    }
  };
  int passed = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 3), cols = 1 + static_cast<int64_t>(rng() % 9);
    const int64_t ld = cols + static_cast<int64_t>(rng() % 3);
    const int kinds = 1 + static_cast<int>(rng() % 3);  // few distinct elements make passing blocks common
    std::vector<float> pool(static_cast<size_t>(kinds));
    for (float& v : pool) v = element();
    if (rng() % 50 == 0) pool[0] = rng() % 2 ? std::numeric_limits<float>::infinity() : std::nanf("");
    std::vector<float> block(static_cast<size_t>(rows * ld), std::nanf(""));  // padding is never read
    std::vector<float> seen;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        const float v = pool[rng() % pool.size()];
        block[static_cast<size_t>(i * ld + j)] = v;
        seen.push_back(v);
      }
    }
    const Expected want = reference(seen);
    int frac = -1;
    double max_int = -1.0;
    const bool ok = gemm_integer_scan(GemmValues{block.data(), rows, cols, ld}, &frac, &max_int);
    INFO("trial " << trial << ": first element " << seen[0]);
    REQUIRE(ok == want.ok);
    if (ok) {
      ++passed;
      REQUIRE(frac == want.frac);
      REQUIRE(max_int == want.max_int);
    }
  }
  CHECK(passed > 2000);  // both outcomes are exercised
}

TEST_CASE("fast path (e) posit products and accumulator equal mac_reduce", "[gemm]") {
  for (auto [mul, acc] : {std::pair{"posit16_1", "posit16_1"},
                          {"posit8_0", "posit8_0"},
                          {"posit16_2", "posit16_2"},
                          {"posit12_1", "posit12_1"},
                          {"posit8_1", "posit16_1"},
                          {"posit16_1", "posit24_0"}}) {
    INFO(mul << " / " << acc);
    check_gemm(policy(mul, acc), GemmPath::Posit, Data::Normal, Data::Normal, 50);
    check_gemm(policy(mul, acc, acc, 6), GemmPath::Posit, Data::Wide, Data::Sparse, 51,
               {{5, 37, 41}, {9, 40, 300}});
    check_gemm(policy(mul, acc), GemmPath::Posit, Data::Specials, Data::Specials, 52,
               {{5, 37, 41}, {3, 17, 300}});
    check_gemm(policy(mul, acc), GemmPath::Posit, Data::Tiny, Data::Wide, 53, {{5, 37, 41}});
    // KernPosit's poison form: tiles that end without a NaN and tiles that micro<true> runs again.
    check_gemm(policy(mul, acc), GemmPath::Posit, Data::Window, Data::Window, 54);
    check_gemm(policy(mul, acc), GemmPath::Posit, Data::Window, Data::Normal, 55,
               {{1, 1, 1}, {4, 32, 3}, {5, 37, 41}, {13, 47, 29}, {9, 70, 300}});
    check_gemm(policy(mul, acc), GemmPath::Posit, Data::Edges, Data::Edges, 56,
               {{1, 1, 1}, {1, 37, 5}, {5, 37, 41}, {9, 70, 300}});
    check_gemm(policy(mul, acc), GemmPath::Posit, Data::Tiny, Data::Tiny, 57, {{1, 1, 1}, {5, 37, 41}});
    check_gemm(policy(mul, acc), GemmPath::Posit, Data::Huge, Data::Normal, 59, {{1, 1, 1}, {5, 37, 41}});
  }
  // posit10_3: 64 grid binades fill the table, no window beyond them, maxpos 2^64: no poison form.
  check_gemm(policy("posit10_3", "posit10_3"), GemmPath::Posit, Data::Big, Data::Big, 58,
             {{1, 1, 300}, {5, 37, 300}});
}
