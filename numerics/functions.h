// The project's own binary32 non-linear functions: the `exact` mode of
// docs/contract.md section 9 (exp, log, tanh, sigmoid, erf, gelu, silu, rsqrt,
// reciprocal, sqrt). A layer computes f(x) here and then rounds the binary32
// result to its output format; no libm or CUDA math result ever reaches an
// emulated value.
//
// Why a private implementation: libm and CUDA's math library differ from each
// other and between versions, so the CPU reference and the CUDA backend would
// not agree bit for bit. Everything below uses only
//   - binary32 +, -, *, / rounded to nearest even (add/sub/mul/div below:
//     plain operators on the host, __fadd_rn & co. on the device, which nvcc
//     never fuses into an FMA whatever --fmad says),
//   - integer and bit operations, comparisons and float<->int conversions,
// so any IEEE binary32 machine gives the same bits. On the host a*b+c must stay
// two roundings: the build's -ffp-contract=off does that (it is also GCC's
// default under -std=c++17, and clang's default "on" only fuses within one
// expression, which never holds two operations here). -ffp-contract=fast, GCC's
// default under -std=gnu++17, changes the bits; tests/test_functions.cpp pins
// them. Subnormals must not be flushed (no -ftz, no fast-math).
//
// Accuracy, measured against MPFR over all 2^32 inputs (docs/functions.md has
// the figures and the commands; tests/test_functions.cpp keeps them): sqrt,
// rsqrt and reciprocal are correctly rounded; the others stay below 0.58 ulp
// and return the correctly rounded result for 99.79% (gelu) to 99.997% of inputs.
//
// Methods: Cody-Waite reduction with an exactly representable k*ln2_hi for exp;
// exponent extraction and the atanh series in s = f/(2+f) for log; minimax
// polynomials (a Remez exchange in 50-digit arithmetic, coefficients rounded to
// binary32, Horner) near 0; the tails of erf and gelu through exp(-x^2) times
// Mills' ratio, with the square split exactly (Dekker); integer square roots
// for sqrt and rsqrt. Float-float intermediates (hi + lo) keep each function
// to essentially one rounding at the end.
#pragma once

#include "numerics/fp32_ops.h"
#include "numerics/hd.h"

#if defined(__FAST_MATH__)
#error "numerics/functions.h needs IEEE arithmetic: do not compile with -ffast-math"
#endif

namespace emu {
namespace fn_detail {

// One IEEE binary32 operation, rounded to nearest even, never fused.
using fp32::add;
using fp32::div;
using fp32::mul;
using fp32::sub;

// Every NaN result is this one (positive, quiet, zero payload): hosts and
// devices propagate NaN payloads differently, so none is propagated.
EMU_HD float nan_result() { return bits_float(0x7fc00000u); }
EMU_HD float inf_result(bool negative) { return bits_float(negative ? 0xff800000u : 0x7f800000u); }
EMU_HD bool is_nan_f(float x) { return (float_bits(x) & 0x7fffffffu) > 0x7f800000u; }
EMU_HD float abs_f(float x) { return bits_float(float_bits(x) & 0x7fffffffu); }
// |r| with the sign bit of `sign_of` (r must be >= +0).
EMU_HD float with_sign_of(float r, float sign_of) {
  return bits_float(float_bits(r) | (float_bits(sign_of) & 0x80000000u));
}

// 2^k for -126 <= k <= 127.
EMU_HD float pow2f(int k) { return bits_float(static_cast<uint32_t>(k + 127) << 23); }

// p * 2^k with a single rounding (to a subnormal, zero or Inf where the result
// lands there), for finite 2^-50 <= |p| < 2^49 and any k.
EMU_HD float scale_pow2(float p, int k) {
  if (k > 127) {
    if (k > 254) k = 254;
    return mul(mul(p, pow2f(127)), pow2f(k - 127));  // the first product is exact or already Inf
  }
  if (k >= -126) return mul(p, pow2f(k));
  if (k < -200) return mul(p, 0.0f);                // |p| 2^k < 2^-151: a zero of p's sign
  return mul(mul(p, pow2f(k + 126)), pow2f(-126));  // exact, then the one rounding
}

// Float-float ("double-float") values: hi + lo with |lo| much smaller than
// |hi|, worth about 44 bits. Used where a chain of roundings would otherwise
// add up (exp's 1 + r + ..., the quotients of tanh/sigmoid/silu, Mills' ratio
// in erf/gelu), so that each function rounds essentially once at the end.
struct F2 {
  float hi;
  float lo;
};

// a + b exactly (Knuth's TwoSum; any a, b without overflow).
EMU_HD F2 two_sum(float a, float b) {
  float s = add(a, b);
  float bb = sub(s, a);
  float err_a = sub(a, sub(s, bb));
  float err_b = sub(b, bb);
  return {s, add(err_a, err_b)};
}

// a + b exactly when |a| >= |b| (Dekker's Fast2Sum).
EMU_HD F2 fast_two_sum(float a, float b) {
  float s = add(a, b);
  return {s, sub(b, sub(s, a))};
}

// Veltkamp's split: hi + lo == a, each with at most 12 significant bits.
// Valid for |a| < 2^114.
EMU_HD F2 split12(float a) {
  float c = mul(4097.0f, a);  // 2^12 + 1
  float hi = sub(c, sub(c, a));
  return {hi, sub(a, hi)};
}

// a * b exactly (Dekker), without an FMA. Valid while the factors split without
// overflow (|a|, |b| < 2^114) and the error term, about 2^-48 |a b|, is normal;
// where a caller goes below that (erf near 2^-100), what is lost lies far below
// the result's last bit.
EMU_HD F2 two_prod(float a, float b) {
  F2 as = split12(a);
  F2 bs = split12(b);
  float p = mul(a, b);
  float e = sub(mul(as.hi, bs.hi), p);
  e = add(e, mul(as.hi, bs.lo));
  e = add(e, mul(as.lo, bs.hi));
  e = add(e, mul(as.lo, bs.lo));
  return {p, e};
}

EMU_HD float f2_value(F2 a) { return add(a.hi, a.lo); }
EMU_HD F2 f2_add_f(float a, F2 b) {
  F2 s = two_sum(a, b.hi);
  return {s.hi, add(s.lo, b.lo)};
}
EMU_HD F2 f2_mul_f(F2 a, float b) {
  F2 p = two_prod(a.hi, b);
  return {p.hi, add(p.lo, mul(a.lo, b))};
}
EMU_HD F2 f2_mul(F2 a, F2 b) {
  F2 p = two_prod(a.hi, b.hi);
  return {p.hi, add(p.lo, add(mul(a.hi, b.lo), mul(a.lo, b.hi)))};
}
// n / d: the rounded quotient and its correction from the exact residual.
EMU_HD F2 f2_div(F2 n, F2 d) {
  float y = div(n.hi, d.hi);
  F2 yd = two_prod(y, d.hi);
  float r = sub(n.hi, yd.hi);  // exact: y d.hi is within 2 ulps of n.hi
  r = sub(r, yd.lo);
  r = add(r, n.lo);
  r = sub(r, mul(y, d.lo));
  return {y, div(r, d.hi)};
}

// (v.hi + v.lo) * 2^k rounded once, also where the result is subnormal (a
// plain scale of the rounded sum would round twice there). |v.hi| in [2^-50, 2^49].
EMU_HD float scale_f2(F2 v, int k) {
  v = fast_two_sum(v.hi, v.lo);  // now |lo| <= ulp(hi)/2
  float r = scale_pow2(v.hi, k);
  if (abs_f(r) > 0x1p-126f) return r;  // normal: the scaling was exact
  if (k < -200) return mul(v.hi, 0.0f);
  // Count in units of 2^-149, where the subnormal grid is the integers. |hi| is
  // rounded to an integer (ties to even) by adding and removing 2^23; lo can
  // only matter when hi sits exactly halfway, since halves are on hi's grid.
  float hs = abs_f(scale_pow2(v.hi, k + 149));  // exact, <= 2^23
  float ls = scale_pow2(v.lo, k + 149);
  if (v.hi < 0.0f) ls = -ls;
  float n = sub(add(hs, 0x1p23f), 0x1p23f);
  float d = sub(hs, n);  // exact
  if (d == 0.5f && ls > 0.0f) n = add(n, 1.0f);
  if (d == -0.5f && ls < 0.0f) n = sub(n, 1.0f);
  return with_sign_of(mul(n, 0x1p-149f), v.hi);
}

// A low part known to be > 0 that may have underflowed: its sign still breaks
// a tie in scale_f2 (x/2 is one for odd subnormal x in gelu and silu).
EMU_HD float tiny_positive(float lo) { return lo > 0.0f ? lo : 0x1p-149f; }

// c[0] + s*(c[1] + s*(c[2] + ...)).
template <int N>
EMU_HD float horner(float s, const float (&c)[N]) {
  float acc = c[N - 1];
  for (int i = N - 2; i >= 0; --i) acc = add(mul(acc, s), c[i]);
  return acc;
}

// The same with the last two steps in float-float and c[0] extended by c0_lo:
// what is left in binary32, s^2 (c[2] + ...), is small next to c[0] + s c[1],
// so the result is good to a few 2^-30 relative (plus the fit's own error).
template <int N>
EMU_HD F2 horner_f2(float s, const float (&c)[N], float c0_lo) {
  static_assert(N >= 3, "two float-float steps need three coefficients");
  float acc = c[N - 1];
  for (int i = N - 2; i >= 2; --i) acc = add(mul(acc, s), c[i]);
  F2 inner = f2_add_f(c[1], two_prod(acc, s));  // c[1] + s (c[2] + ...)
  F2 tail = f2_mul_f(inner, s);
  F2 r = two_sum(c[0], tail.hi);
  return {r.hi, add(r.lo, add(tail.lo, c0_lo))};
}

// ln 2 = kLn2Hi + kLn2Lo (+ 1e-14 relative); kLn2Hi = 22713 * 2^-15 has 15
// significant bits, so k * kLn2Hi is exact for |k| < 512.
constexpr float kLn2Hi = 0x1.62e4p-1f;
constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
constexpr float kInvLn2 = 0x1.715476p+0f;
constexpr float kSqrt2Hi = 0x1.6a09e6p+0f;  // sqrt 2 = hi + lo
constexpr float kSqrt2Lo = 0x1.9fcef4p-26f;
constexpr float kInvSqrt2PiHi = 0x1.988454p-2f;  // 1/sqrt(2 pi) = hi + lo
constexpr float kInvSqrt2PiLo = -0x1.857936p-27f;

// exp(hi + lo) = p * 2^k with p = p.hi + p.lo in [0.70, 1.42], relative error
// about 2^-28, and p.hi the binary32 nearest to p (within that error).
struct ExpParts {
  F2 p;
  int k;
};

// For -120 <= hi <= 89 and |lo| <= 2^-20 |hi| (lo carries what hi could not
// hold, e.g. the low half of an exactly split -x^2).
EMU_HD ExpParts exp_parts(float hi, float lo) {
  // (e^r - 1 - r - r^2/2) / r^3 on |r| <= 0.3467: the minimax fit of
  // (e^r - 1 - r) / r^2 (degree 5, 2^-29.5), whose constant term is exactly 1/2.
  constexpr float kPoly[5] = {0x1.555556p-3f, 0x1.5554e8p-5f, 0x1.1110acp-7f, 0x1.6d4352p-10f,
                              0x1.a17e3cp-13f};
  float t = mul(hi, kInvLn2);
  int k = static_cast<int>(add(t, t < 0.0f ? -0.5f : 0.5f));  // round half away; |k| <= 174
  float kf = static_cast<float>(k);
  // Cody-Waite: r_hi is exact (k = 0, or |hi| > 1/4 so that hi and the exact
  // k*kLn2Hi are multiples of 2^-25 and their difference is below 1/2); the
  // rest of k*ln2, and lo, go to r_lo. |r| <= ln2/2 (1 + 2^-15).
  float r_hi = sub(hi, mul(kf, kLn2Hi));
  float r_lo = sub(mul(kf, kLn2Lo), lo);
  F2 r = two_sum(r_hi, -r_lo);  // r.hi + r.lo == r_hi - r_lo
  // e^r = 1 + r + r^2/2 + r^3 P(r): the first three terms exactly (r^2 by
  // Dekker), the cubic part (< 0.0074) and e^r.hi r.lo in binary32.
  F2 sq = two_prod(r.hi, r.hi);
  F2 half_sq = {mul(0.5f, sq.hi), mul(0.5f, sq.lo)};
  float cubic = mul(mul(sq.hi, r.hi), horner(r.hi, kPoly));
  float corr = add(r.lo, mul(r.lo, r.hi));
  F2 a = two_sum(1.0f, r.hi);
  F2 b = two_sum(a.hi, half_sq.hi);
  float rest = add(add(add(a.lo, b.lo), half_sq.lo), add(cubic, corr));
  return {fast_two_sum(b.hi, rest), k};
}

// 1 + p 2^k and p 2^k - 1 as float-floats, for 2^k p from exp_parts with k >= -126.
EMU_HD F2 one_plus_scaled(F2 p, int k, float one) {
  F2 s = two_sum(scale_pow2(p.hi, k), one);
  return {s.hi, add(s.lo, scale_pow2(p.lo, k))};
}

// Mills' ratio of the standard normal over sqrt(2 pi):
//   mills_phi(u) = (1 - Phi(u)) / exp(-u^2/2) = M(u) / sqrt(2 pi),
// for 0.5 <= u <= 15, as a float-float good to about 2^-28 relative.
// Minimax polynomials in u - centre on [0.5, 4) in pieces of width 1/2
// (2^-33.8 .. 2^-41), and u mills_phi(u) as a polynomial in 1/u^2 for u >= 4
// (2^-31.6). The last entry of each row extends the constant term.
EMU_HD F2 mills_phi(float u) {
  if (u >= 4.0f) {
    constexpr float kTail[8] = {0x1.988452p-2f, -0x1.988392p-2f, 0x1.323f0cp+0f,  -0x1.7b823cp+2f,
                                0x1.363432p+5f, -0x1.087db2p+8f, 0x1.5e164cp+10f, -0x1.da1a7ap+11f};
    float w = div(1.0f, u);
    F2 wu = two_prod(w, u);
    F2 w2 = {w, div(sub(sub(1.0f, wu.hi), wu.lo), u)};  // 1/u as float-float
    return f2_mul(horner_f2(mul(w, w), kTail, 0x1.b5054p-27f), w2);
  }
  // One switch, not a table: constant indices keep the coefficients out of
  // (device) local memory.
  int i = static_cast<int>(mul(sub(u, 0.5f), 2.0f));  // exact; 0..6
  if (i > 6) i = 6;
  if (i < 0) i = 0;
  float s = sub(u, add(0.75f, mul(0.5f, static_cast<float>(i))));  // exact (Sterbenz)
  switch (i) {
    case 0: {  // [0.5, 1)
      constexpr float c[8] = {0x1.337024p-2f, -0x1.63e072p-3f, 0x1.5bf7f4p-4f,  -0x1.2c849cp-5f,
                              0x1.d68592p-7f, -0x1.53a8f4p-8f, 0x1.cf0c06p-10f, -0x1.24788p-11f};
      return horner_f2(s, c, -0x1.0919fap-27f);
    }
    case 1: {  // [1, 1.5)
      constexpr float c[8] = {0x1.d898dep-3f, -0x1.c49322p-4f, 0x1.7b79d4p-5f,  -0x1.1f33fep-6f,
                              0x1.8feeacp-8f, -0x1.038c2ap-9f, 0x1.402624p-11f, -0x1.71853cp-13f};
      return horner_f2(s, c, 0x1.3285f2p-32f);
    }
    case 2: {  // [1.5, 2)
      constexpr float c[8] = {0x1.7b5abep-3f, -0x1.3253b6p-4f,  0x1.bd45f6p-6f,  -0x1.2962f4p-7f,
                              0x1.721c34p-9f, -0x1.b176aep-11f, 0x1.e5541ap-13f, -0x1.00683ep-14f};
      return horner_f2(s, c, -0x1.a07ff6p-28f);
    }
    case 3: {  // [2, 2.5)
      constexpr float c[8] = {0x1.3aaddep-3f,  -0x1.b405ccp-5f,  0x1.15aa6cp-6f,  -0x1.49badep-8f,
                              0x1.70c378p-10f, -0x1.87585ap-12f, 0x1.8f2f92p-14f, -0x1.831a72p-16f};
      return horner_f2(s, c, -0x1.cce196p-32f);
    }
    case 4: {  // [2.5, 3)
      constexpr float c[8] = {0x1.0bb968p-3f,  -0x1.432b1ap-5f,  0x1.6c5e3cp-7f, -0x1.838c52p-9f,
                              0x1.87b5bcp-11f, -0x1.7a60bap-13f, 0x1.60ff6p-15f, -0x1.3b129cp-17f};
      return horner_f2(s, c, 0x1.9bd6e8p-28f);
    }
    case 5: {  // [3, 3.5)
      constexpr float c[8] = {0x1.d0b31cp-4f, -0x1.ef2cc8p-6f,  0x1.f2f5dp-8f,   -0x1.dec5a2p-10f,
                              0x1.b7d3ep-12f, -0x1.84815ap-14f, 0x1.4cd488p-16f, -0x1.124a9cp-18f};
      return horner_f2(s, c, 0x1.0471a6p-33f);
    }
    default: {  // [3.5, 4)
      constexpr float c[8] = {0x1.99c2b6p-4f,  -0x1.85dc7cp-6f, 0x1.62200ep-8f,  -0x1.34a258p-10f,
                              0x1.031efap-12f, -0x1.a4851p-15f, 0x1.4c2792p-17f, -0x1.fb2256p-20f};
      return horner_f2(s, c, 0x1.b674fcp-29f);
    }
  }
}

// x = m * 2^e exactly with m in [2^23, 2^24), for finite x > 0 given by its bits.
EMU_HD void unpack_positive(uint32_t u, uint32_t* m, int* e) {
  uint32_t biased = u >> 23;
  uint32_t frac = u & 0x007fffffu;
  if (biased == 0) {  // subnormal: bring the leading bit to bit 23
    int shift = clz64(frac) - 40;
    *m = frac << shift;
    *e = -149 - shift;
  } else {
    *m = frac | 0x00800000u;
    *e = static_cast<int>(biased) - 150;
  }
}

// floor(sqrt(n)) and the remainder n - floor(sqrt(n))^2, digit by digit.
EMU_HD uint64_t isqrt64(uint64_t n, uint64_t* rem) {
  uint64_t root = 0;
  uint64_t bit = 1ull << 62;
  while (bit > n) bit >>= 2;
  while (bit != 0) {
    if (n >= root + bit) {
      n -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  *rem = n;
  return root;
}

// sig * 2^e (+ something below the last bit of sig if `sticky`) rounded to
// nearest even binary32. The caller guarantees sig >= 2^24 and a normal result.
EMU_HD float round_pack_normal(uint64_t sig, int e, bool sticky) {
  int drop = 63 - clz64(sig) - 23;  // bits below the 24 kept ones, >= 1
  uint64_t kept = sig >> drop;
  bool round = (sig >> (drop - 1)) & 1;
  sticky = sticky || (sig & ((1ull << (drop - 1)) - 1)) != 0;
  if (round && (sticky || (kept & 1))) ++kept;  // may carry to 2^24: the exponent field absorbs it
  int biased = e + drop + 23 + 127;             // of the leading bit of kept
  return bits_float((static_cast<uint32_t>(biased - 1) << 23) + static_cast<uint32_t>(kept));
}

}  // namespace fn_detail

// e^x. Overflow to +Inf from x = 0x1.62e43p+6 (88.72284) on; +0 from
// x = -0x1.9fe36ap+6 (-103.97208) down.
EMU_HD float fn_exp(float x) {
  using namespace fn_detail;
  if (is_nan_f(x)) return nan_result();
  if (x > 0x1.62e42ep+6f) return inf_result(false);
  if (x < -0x1.9fe368p+6f) return 0.0f;
  ExpParts e = exp_parts(x, 0.0f);
  return scale_f2(e.p, e.k);
}

// ln x. log(+-0) = -Inf, log(x < 0) = NaN, log(+Inf) = +Inf, log(1) = +0.
EMU_HD float fn_log(float x) {
  using namespace fn_detail;
  // (2 atanh(s)/s - 2) / s^2 as a polynomial in z = s^2 <= 0.02944, minimax, 2^-29.7.
  constexpr float kPoly[4] = {0x1.555556p-1f, 0x1.9999ecp-2f, 0x1.245c0cp-2f, 0x1.ddd8d8p-3f};
  uint32_t u = float_bits(x);
  if (is_nan_f(x)) return nan_result();
  if ((u & 0x7fffffffu) == 0) return inf_result(true);
  if (u >> 31) return nan_result();
  if (u == 0x7f800000u) return x;
  int e = 0;
  if (u < 0x00800000u) {  // subnormal: scale into the normal range (exact)
    u = float_bits(mul(x, 0x1p23f));
    e = -23;
  }
  // x = 2^e * m, m in [sqrt(1/2), sqrt(2)), f = m - 1 exact.
  e += static_cast<int>(u >> 23) - 127;
  uint32_t m_bits = (u & 0x007fffffu) | 0x3f800000u;
  if (m_bits > 0x3fb504f3u) {
    m_bits -= 0x00800000u;
    e += 1;
  }
  float f = sub(bits_float(m_bits), 1.0f);
  // log(1+f) = 2 atanh(s) = 2s + s R(s^2), s = f/(2+f), rewritten (2s = f - s f)
  // as f - f^2/2 + s (f^2/2 + R) so that f enters unrounded (fdlibm); here s,
  // f^2/2 and the sums are float-floats, so only f^2/2 + R is rounded:
  // log x = (e ln2_hi + f) + (s (f^2/2 + R) - f^2/2) + e ln2_lo.
  F2 s = f2_div({f, 0.0f}, two_sum(2.0f, f));
  float z = mul(s.hi, s.hi);
  float r = mul(z, horner(z, kPoly));
  F2 f_sq = two_prod(f, f);
  F2 hfsq = {mul(0.5f, f_sq.hi), mul(0.5f, f_sq.lo)};  // f^2/2 exactly
  float hfsq_r = add(hfsq.hi, r);
  F2 su = two_prod(s.hi, hfsq_r);
  F2 mid = two_sum(su.hi, -hfsq.hi);  // s (f^2/2 + R) - f^2/2, leading part exact
  float dk = static_cast<float>(e);
  float low = add(add(su.lo, mul(s.lo, hfsq_r)), sub(mid.lo, hfsq.lo));
  low = add(low, mul(dk, kLn2Lo));
  F2 lead = two_sum(mul(dk, kLn2Hi), f);  // exact
  F2 sum = two_sum(lead.hi, mid.hi);
  return add(sum.hi, add(sum.lo, add(lead.lo, low)));
}

// sqrt(x), correctly rounded (an integer square root of the significand).
// sqrt(-0) = -0, sqrt(x < 0) = NaN, sqrt(+Inf) = +Inf.
EMU_HD float fn_sqrt(float x) {
  using namespace fn_detail;
  uint32_t u = float_bits(x);
  if (is_nan_f(x)) return nan_result();
  if ((u & 0x7fffffffu) == 0) return x;
  if (u >> 31) return nan_result();
  if (u == 0x7f800000u) return x;
  uint32_t m;
  int e;
  unpack_positive(u, &m, &e);
  uint64_t big = m;  // x = big * 2^e with e even, big in [2^23, 2^25)
  if (e & 1) {
    big <<= 1;
    e -= 1;
  }
  big <<= 26;  // [2^49, 2^51): a 25- or 26-bit root
  e -= 26;
  uint64_t rem;
  uint64_t root = isqrt64(big, &rem);
  return round_pack_normal(root, e / 2, rem != 0);
}

// 1/sqrt(x), correctly rounded. rsqrt(+0) = +Inf, rsqrt(-0) = -Inf (IEEE 754
// rSqrt; MPFR's rec_sqrt gives +Inf there), rsqrt(+Inf) = +0, rsqrt(x < 0) = NaN.
EMU_HD float fn_rsqrt(float x) {
  using namespace fn_detail;
  uint32_t u = float_bits(x);
  if (is_nan_f(x)) return nan_result();
  if ((u & 0x7fffffffu) == 0) return inf_result(u >> 31);
  if (u >> 31) return nan_result();
  if (u == 0x7f800000u) return 0.0f;
  uint32_t m;
  int e;
  unpack_positive(u, &m, &e);
  uint64_t big = m;  // x = big * 2^e with e even, big in [2^23, 2^25)
  if (e & 1) {
    big <<= 1;
    e -= 1;
  }
  // 1/sqrt(x) = 2^(-e/2 - 37) sqrt(2^74 / big); floor(sqrt(floor(q))) ==
  // floor(sqrt(q)), so the integer quotient loses nothing but the sticky bit.
  uint64_t q_hi = (1ull << 49) / big;
  uint64_t r_hi = (1ull << 49) % big;
  uint64_t q_lo = (r_hi << 25) / big;
  uint64_t r_lo = (r_hi << 25) % big;
  uint64_t quotient = (q_hi << 25) + q_lo;  // floor(2^74 / big), in [2^49, 2^51]
  uint64_t rem;
  uint64_t root = isqrt64(quotient, &rem);  // in (2^24.5, 2^25.5]
  return round_pack_normal(root, -37 - e / 2, rem != 0 || r_lo != 0);
}

// 1/x: one IEEE division, correctly rounded. 1/+-0 = +-Inf, 1/+-Inf = +-0.
EMU_HD float fn_reciprocal(float x) {
  using namespace fn_detail;
  if (is_nan_f(x)) return nan_result();
  return div(1.0f, x);
}

// tanh x. Odd; +-1 from |x| = 0x1.205968p+3 (9.010914) on; tanh(x) = x for tiny x.
EMU_HD float fn_tanh(float x) {
  using namespace fn_detail;
  // (tanh(x) - x) / x^3 as a polynomial in t = x^2 <= 0.09, minimax, 2^-34.7.
  constexpr float kPoly[5] = {-0x1.555556p-2f, 0x1.11110ep-3f, -0x1.ba17b8p-5f, 0x1.655914p-6f,
                              -0x1.097c2cp-7f};
  if (is_nan_f(x)) return nan_result();
  float a = abs_f(x);
  float r;
  if (a >= 0x1.205968p+3f) {
    r = 1.0f;
  } else if (a < 0.3f) {
    float t = mul(a, a);
    r = add(a, mul(a, mul(t, horner(t, kPoly))));
  } else {
    // (e^2a - 1) / (e^2a + 1), both in float-float.
    ExpParts e = exp_parts(add(a, a), 0.0f);
    r = f2_value(f2_div(one_plus_scaled(e.p, e.k, -1.0f), one_plus_scaled(e.p, e.k, 1.0f)));
  }
  return with_sign_of(r, x);
}

// 1 / (1 + e^-x). sigmoid(+Inf) = 1, sigmoid(-Inf) = +0; 1 from x = 17.3287
// on, +0 from x = -0x1.9fe36ap+6 (-103.97208) down.
EMU_HD float fn_sigmoid(float x) {
  using namespace fn_detail;
  if (is_nan_f(x)) return nan_result();
  if (x > 18.0f) return 1.0f;
  if (x < -120.0f) return 0.0f;
  if (x >= 0.0f) {
    ExpParts e = exp_parts(-x, 0.0f);  // e^-x in (2^-26, 1]
    return f2_value(f2_div({1.0f, 0.0f}, one_plus_scaled(e.p, e.k, 1.0f)));
  }
  // e^x / (1 + e^x) with e^x = p 2^k: divide p, scale once at the end.
  ExpParts e = exp_parts(x, 0.0f);
  F2 den = e.k >= -126 ? one_plus_scaled(e.p, e.k, 1.0f) : F2{1.0f, 0.0f};
  return scale_f2(f2_div(e.p, den), e.k);
}

// x * sigmoid(x) = x / (1 + e^-x). silu(+Inf) = +Inf, silu(-Inf) = -0;
// silu(x) = x from x = 16.677 on, -0 from x = -0x1.b2a428p+6 (-108.66) down.
EMU_HD float fn_silu(float x) {
  using namespace fn_detail;
  if (is_nan_f(x)) return nan_result();
  if (x > 17.0f) return x;
  if (x < -120.0f) return -0.0f;
  if (abs_f(x) < 0x1p-60f) {  // x/2 + x^2/4, scaled so that nothing is subnormal but the result
    if (x == 0.0f) return x;
    float y = mul(x, 0x1p100f);
    return scale_f2({mul(0.5f, y), tiny_positive(mul(mul(y, x), 0.25f))}, -100);
  }
  if (x >= 0.0f) {
    ExpParts e = exp_parts(-x, 0.0f);
    return f2_value(f2_div({x, 0.0f}, one_plus_scaled(e.p, e.k, 1.0f)));
  }
  ExpParts e = exp_parts(x, 0.0f);
  F2 den = e.k >= -126 ? one_plus_scaled(e.p, e.k, 1.0f) : F2{1.0f, 0.0f};
  return scale_f2(f2_div(f2_mul_f(e.p, x), den), e.k);
}

// erf x. Odd; +-1 from |x| = 0x1.f5a88ap+1 (3.919206) on.
EMU_HD float fn_erf(float x) {
  using namespace fn_detail;
  // erf(x)/x - 1 as a polynomial in t = x^2 <= 0.5625, minimax, 2^-35.2 absolute.
  constexpr float kPoly[7] = {0x1.06eba8p-3f, -0x1.812746p-2f,  0x1.ce2fp-4f,   -0x1.b82716p-6f,
                              0x1.55e41ep-8f, -0x1.b63048p-11f, 0x1.8d6ecap-14f};
  constexpr float kPoly0Lo = 0x1.0372a4p-30f;
  if (is_nan_f(x)) return nan_result();
  float a = abs_f(x);
  float r;
  if (a >= 0x1.f5a88ap+1f) {
    r = 1.0f;
  } else if (a < 0x1p-100f) {
    // a (1 + c0), scaled up so that the products are exact, rounded once.
    float y = mul(a, 0x1p100f);
    r = scale_f2(f2_add_f(y, f2_mul_f({kPoly[0], kPoly0Lo}, y)), -100);
  } else if (a < 0.75f) {
    // T at a^2 rounded, plus T'(a^2) ~ c1 + 2 c2 a^2 times the part rounded off.
    F2 sq = two_prod(a, a);
    F2 t = horner_f2(sq.hi, kPoly, kPoly0Lo);
    float slope = add(kPoly[1], mul(mul(2.0f, kPoly[2]), sq.hi));
    t.lo = add(t.lo, mul(sq.lo, slope));
    r = f2_value(f2_add_f(a, f2_mul_f(t, a)));
  } else {
    // erfc(a) = 2 exp(-a^2) mills_phi(sqrt(2) a). a^2 is split exactly so that
    // the exponential sees the whole square; u = sqrt(2) a is rounded, and
    // mills_phi' = u mills_phi - 1/sqrt(2 pi) corrects for the part dropped.
    F2 sq = two_prod(a, a);
    ExpParts e = exp_parts(-sq.hi, -sq.lo);
    F2 u = two_prod(a, kSqrt2Hi);
    float u_lo = add(u.lo, mul(a, kSqrt2Lo));
    F2 m = mills_phi(u.hi);
    float slope = sub(mul(u.hi, m.hi), kInvSqrt2PiHi);
    m.lo = add(m.lo, mul(u_lo, slope));
    F2 erfc = f2_mul(e.p, m);
    int k = e.k + 1;
    r = f2_value(f2_add_f(1.0f, {-scale_pow2(erfc.hi, k), -scale_pow2(erfc.lo, k)}));
  }
  return with_sign_of(r, x);
}

// x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, the erf form of GELU. gelu(+Inf) =
// +Inf, gelu(-Inf) = -0; gelu(x) = x from x = 5.3475 on, -0 from x =
// -0x1.cb64eap+3 (-14.356) down. Relative error is bounded everywhere, the
// negative tail included (Phi there comes from exp and Mills' ratio, not 1+erf).
EMU_HD float fn_gelu(float x) {
  using namespace fn_detail;
  // (Phi(x) - 1/2) / x as a polynomial in t = x^2 <= 1/4, minimax, 2^-35.8 absolute.
  constexpr float kPoly[5] = {0x1.988454p-2f, -0x1.105836p-4f, 0x1.46cf56p-7f, -0x1.36ecf4p-10f,
                              0x1.cc1ffcp-14f};
  constexpr float kPoly0Lo = -0x1.860f88p-27f;
  if (is_nan_f(x)) return nan_result();
  if (x >= 6.0f) return x;
  if (x <= -15.0f) return -0.0f;
  float a = abs_f(x);
  if (a < 0x1p-60f) {  // x/2 + x^2/sqrt(2 pi), scaled so that nothing is subnormal but the result
    if (a == 0.0f) return x;
    float y = mul(x, 0x1p100f);
    return scale_f2({mul(0.5f, y), tiny_positive(mul(mul(y, x), kInvSqrt2PiHi))}, -100);
  }
  if (a < 0.5f) {
    F2 v = horner_f2(mul(x, x), kPoly, kPoly0Lo);
    F2 phi = f2_add_f(0.5f, f2_mul_f(v, x));  // Phi(x)
    return f2_value(f2_mul_f(phi, x));
  }
  // Upper tail Q(a) = 1 - Phi(a) = exp(-a^2/2) mills_phi(a).
  F2 sq = two_prod(a, a);
  ExpParts e = exp_parts(mul(-0.5f, sq.hi), mul(-0.5f, sq.lo));
  F2 pm = f2_mul(e.p, mills_phi(a));
  if (x > 0.0f) {  // x (1 - Q(x)); Q >= 2^-30 here, so the scaling is exact
    F2 phi = f2_add_f(1.0f, {-scale_pow2(pm.hi, e.k), -scale_pow2(pm.lo, e.k)});
    return f2_value(f2_mul_f(phi, x));
  }
  return scale_f2(f2_mul_f(pm, x), e.k);  // x Q(-x)
}

}  // namespace emu
