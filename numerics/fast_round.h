// Fast rounding kernels for the inner loops of reductions (backends/cpu/gemm.cpp):
// R_F on bit patterns, branch-free, written once for any "lane" type.
//
// Each function is a template over the lane type D (double or float, or a SIMD
// vector of them: numerics/fast_round_lanes.h), so the same source is the scalar
// host function, the scalar CUDA device function and the CPU vector kernel.
// They are second implementations of round_value() (numerics/round.h) for a
// restricted input domain and a restricted set of formats; each says which, and
// tests/test_gemm.cpp checks them against round_value() bit for bit on random
// and edge-case inputs. Some return a `flag` per lane instead of covering every
// input: where flag is set the result is unspecified and the caller must use
// round_value() (or the reference step of mac_reduce) for that lane. Flags are
// rare in practice (values near a format's overflow threshold, posits outside
// their uniform-grid binades, Inf and NaN).
//
// Four techniques:
//  * magic-constant rounding (RNE only): for |x| in binade e, C = 1.5 * 2^k with
//    k = e' + P - Y, e' = max(e, emin) and P the precision of the lane type
//    minus one; (x + C) - C in round-to-nearest-even is x rounded to the
//    target's grid in that binade: for |x| < 2^(k-1) (Y <= P - 2), x + C lies
//    in [2^k, 2^(k+1)) for either sign, whose grid is exactly 2^(e' - Y), and C
//    is an even multiple of it, so ties go to even; the carry into the next
//    binade comes for free. One FP add does the rounding; the subtraction is
//    exact. Needs the default rounding mode and no fast-math.
//  * exact products in binary32 lanes: fma(a, b, C) - C puts the exact product
//    through the magic constant with one rounding (16 lanes per AVX-512 vector).
//  * round-to-odd (Boldo & Melquiond 2008) for sums: the exact sum truncated
//    to the binary32 grid with its last bit ORed with "inexact" rounds to any
//    precision <= 22 bits exactly as the exact sum would (fast_round_lanes.h).
//  * integer rounding on the bit pattern (all non-stochastic modes): within a
//    binade, and across the carry into the next one, IEEE bit patterns are
//    linear in the value (the idea of numerics/bulk_ieee.h, here for binary64
//    inputs, whose exact products of two binary32 values are).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "numerics/fast_round_lanes.h"
#include "numerics/format.h"

namespace emu {

// ---------------------------------------------------------------------------
// IEEE-like formats, round to nearest even, magic constant, binary64 lanes.
//
// Domain: formats with rounding NearestEven, subnormals on, exp_bits <= 10 (any
// specials, :sat); x any binary64. `key` receives x's exponent field; the lane
// is flagged when key >= flag_bits (|x| in the format's top binade or above,
// where it may overflow, or Inf/NaN; fast_ieee_rne_flagged). Unflagged lanes
// give round_value(f, x), signed zeros included; with kSignedZero = false a
// zero result may be +0 where round_value gives -0 (callers that add the
// result to an accumulator that is never -0 need no more).
struct FastIeeeRneD {
  uint64_t emin_bits;  // binary64 exponent field of 2^emin
  uint64_t shift;      // (52 - man_bits) in the exponent field, plus the fraction of 1.5
  uint64_t flag_bits;  // exponent field of the top binade 2^floor(log2 max_finite)
};

EMU_HD bool fast_ieee_rne_d_supported(const Format& f) {
  return f.family == Family::Ieee && f.rounding == Rounding::NearestEven && f.subnormals &&
         f.exp_bits <= 10 && f.man_bits <= 50;
}

EMU_HD FastIeeeRneD fast_ieee_rne_d_params(const Format& f) {
  FastIeeeRneD p;
  p.emin_bits = static_cast<uint64_t>(f.emin + 1023) << 52;
  p.shift = (static_cast<uint64_t>(52 - f.man_bits) << 52) | (uint64_t{1} << 51);  // and the 1.5
  p.flag_bits = double_bits(f.max_finite) & uint64_t{0x7ff0000000000000};
  return p;
}

EMU_HD bool fast_ieee_rne_flagged(const FastIeeeRneD& p, uint64_t key) { return key >= p.flag_bits; }

template <bool kSignedZero = true, class D, class U = typename LaneTraits<D>::U>
EMU_HD D fast_ieee_rne_d(const FastIeeeRneD& p, D x, U* key) {
  const U u = lane_cast<U>(x);
  const U e = u & uint64_t{0x7ff0000000000000};
  const D cs = lane_cast<D>(lane_umax(e, splat<U>(p.emin_bits)) + p.shift);  // 1.5 * 2^k
  const D r = (x + cs) - cs;
  *key = e;
  if constexpr (kSignedZero)
    return lane_cast<D>(lane_cast<U>(r) | (u & uint64_t{0x8000000000000000}));  // x -> 0 keeps its sign
  return r;
}

// ---------------------------------------------------------------------------
// IEEE-like formats, round to nearest even, of an exact binary32 product,
// binary32 lanes: the magic constant added by an FMA, r = fma(a, b, C) - C,
// rounds the exact product once. C comes from the binade of the binary32
// product a * b; when that product rounded up to a power of two 2^E while the
// exact one lies below it, the exact one is within 2^(E-25) of 2^E and rounds
// to 2^E on either binade's grid, so the result is the same.
//
// Domain: rounding NearestEven, subnormals on, exp_bits <= 8, man_bits <= 21
// (bf16, fp16, e4m3, e5m2, e6m6, ...); a, b any binary32 values. `key` and
// the flag as for fast_ieee_rne_d (for the binary32 product; the threshold is
// lower for exp_bits = 8, where C must stay finite: 2^(127 - (23 - man_bits))
// at most). Unflagged lanes give round_value(f, (double)a * b); kSignedZero as
// above.
struct FastIeeeRneF {
  uint32_t emin_bits;  // binary32 exponent field of 2^emin
  uint32_t shift;      // (23 - man_bits) in the exponent field, plus the fraction of 1.5
  uint32_t flag_bits;  // exponent field from which lanes are flagged
  float scale;         // 2^(23 - man_bits) (fast_ieee_rne_product_normal_f)
};

EMU_HD bool fast_ieee_rne_product_f_supported(const Format& f) {
  return f.family == Family::Ieee && f.rounding == Rounding::NearestEven && f.subnormals && f.exp_bits <= 8 &&
         f.man_bits <= 21 && !f.accumulator_only;
}

EMU_HD FastIeeeRneF fast_ieee_rne_f_params(const Format& f) {
  FastIeeeRneF p;
  p.emin_bits = static_cast<uint32_t>(f.emin + 127) << 23;
  p.shift = (static_cast<uint32_t>(23 - f.man_bits) << 23) | (1u << 22);  // and the 1.5
  const uint32_t top = float_bits(static_cast<float>(f.max_finite)) & 0x7f800000u;
  const uint32_t c_ok = static_cast<uint32_t>(254 - (23 - f.man_bits)) << 23;  // C's field stays <= 254
  p.flag_bits = top < c_ok ? top : c_ok;
  p.scale = bits_float(static_cast<uint32_t>(127 + 23 - f.man_bits) << 23);
  return p;
}

EMU_HD bool fast_ieee_rne_flagged(const FastIeeeRneF& p, uint32_t key) { return key >= p.flag_bits; }

template <bool kSignedZero = true, class F, class U = typename LaneTraits<F>::U>
EMU_HD F fast_ieee_rne_product_f(const FastIeeeRneF& p, F a, F b, U* key) {
  const U u = lane_cast<U>(a * b);
  *key = u & 0x7f800000u;
  const F cs = lane_cast<F>(lane_umax(*key, splat<U>(p.emin_bits)) + p.shift);  // 1.5 * 2^k
  const F r = lane_fma(a, b, cs) - cs;
  if constexpr (kSignedZero) return lane_cast<F>(lane_cast<U>(r) | (u & 0x80000000u));
  return r;
}

// fast_ieee_rne_product_f<false> in fewer operations, where the caller knows
// more (its operand bounds say so): every nonzero exact product a b is at least
// 2^emin in magnitude, no lane is flagged, and b 2^s, s = 23 - man_bits, is
// finite. Then q = a (b 2^s) (b 2^s is exact) is the product moved up s binades,
// and C = sign(q) 2^E(q) (q's sign and exponent bits, one and) has the grid of
// the product's binade at man_bits bits: spacing 2^(E(q) - 23) = 2^(E - man_bits).
// The exact product x has C's sign and |x| < 2^(E+1) <= 2^(E(q) - 1), so x + C
// stays in C's binade, RN(x + C) rounds x on that grid, ties to even (C is an
// even multiple of the spacing), and subtracting C is exact (Sterbenz). No
// clamp to the smallest normal's binade: nothing lies below it. As in
// fast_ieee_rne_product_f, a binary32 q that rounded up to a power of two gives
// the same result, and a zero product gives +0 (C is then a zero of its sign).
// Multiply, and, FMA, subtract: two vector operations fewer than the general
// form (b 2^s is one multiply per vector of B, shared by every row of A).
// This form and the two below take a as lanes of F or as any A that multiplies
// an F and enters lane_fma in its place: the CPU kernels pass a broadcast
// operand in memory (backends/cpu/bcast_operand.h), the same value in every lane.
template <class F, class A>
EMU_HD F fast_ieee_rne_product_normal_f(const FastIeeeRneF& p, A a, F b) {
  const F q = a * (b * p.scale);
  const F cs = lane_and_bits(q, 0xff800000u);
  return lane_fma(a, b, cs) - cs;
}

// fast_ieee_rne_product_normal_f in one operation fewer where, besides its
// conditions, a and b have together at most s = 23 - m significant bits (m =
// man_bits; p_a + p_b <= s: e6m6 operands, 7 + 7 <= 17, or bf16's, 8 + 8 <=
// 16, not fp16's). With E = E(x) for the exact product x = a b:
//   - x has P = p_a + p_b <= 22 bits, all at or above E + 1 - P, so q =
//     a (b 2^s) = x 2^s is exact and its set bits lie at or above E + 1 - P + s
//     >= E + 1 - m;
//   - the grid of x's binade at m fraction bits has step 2^g, g = E - m, which
//     is also q's last bit (E(q) - 23): q is on the grid with bit g clear;
//   - |x + q| = |q| (1 + |x| / |q|) = sig(x) (1 + 2^-s) 2^E(q) with sig(x) <=
//     2 - 2^(1-P) and P <= s: below 2^(E(q)+1), so x + q stays in q's binade.
// So q serves as the magic constant as it is: RN(x + q) (one FMA) rounds x + q
// to the grid (2^(E(q)+1), if it rounds there, is a grid point with bit g
// clear), a tie to the candidate q + r whose bit g is r's (q has none at or
// below g), i.e. to even; subtracting q is exact (Sterbenz) and leaves R_m(x).
// With p_a + p_b > s, x + q may cross into the next binade, whose grid is
// coarser. A zero product gives q = +-0 and +0 out. Multiply, FMA, subtract
// (b 2^s is shared as in the normal form).
template <class F, class A>
EMU_HD F fast_ieee_rne_product_short_f(const FastIeeeRneF& p, A a, F b) {
  const F q = a * (b * p.scale);
  return lane_fma(a, b, q) - q;
}

// The larger magnitude of q and t > 0 with q's sign (q finite): one vrangeps
// on AVX-512 DQ (kLaneRange), integer steps elsewhere.
#if defined(__AVX512DQ__) && defined(__AVX512VL__)
constexpr bool kLaneRange = true;
#else
constexpr bool kLaneRange = false;
#endif
EMU_HD float lane_max_abs_signed(float q, float t) {
  const uint32_t u = float_bits(q), m = u & 0x7fffffffu, tb = float_bits(t);
  return bits_float((m < tb ? tb : m) | (u & 0x80000000u));
}
template <class F, class U = typename LaneTraits<F>::U>
inline F lane_max_abs_signed(F q, F t) {
#if defined(__AVX512DQ__) && defined(__AVX512VL__)
  // imm8 3: the larger magnitude (bits 1:0 = 11) with the first operand's sign (bits 3:2 = 00).
  if constexpr (sizeof(F) == 64) return (F)_mm512_range_ps((__m512)q, (__m512)t, 3);
  if constexpr (sizeof(F) == 32) return (F)_mm256_range_ps((__m256)q, (__m256)t, 3);
#endif
  const U u = lane_cast<U>(q), m = u & 0x7fffffffu, tb = lane_cast<U>(t);
  return lane_cast<F>(((m < tb) ? tb : m) | (u & 0x80000000u));
}

// fast_ieee_rne_product_short_f for the products in mul's subnormal binades
// as well (no bound from below): the same conditions but normal_ok's floor. C =
// q where |q| >= T = 2^(emin + s), i.e. |x| >= 2^emin, as there; else C =
// sign(q) T, a power of two of x's sign whose binade has the step 2^(emin - m)
// of mul's subnormals, |x| < 2^emin = 2^-s T keeps x + C in [C, 2C], and RN(x +
// C) - C is RNE of x on that grid (C has no low bits). A q below binary32's
// normal range may be inexact, but then |q| < T all the same. Multiply, max of
// magnitudes (one vrangeps), FMA, subtract: two operations fewer than
// fast_ieee_rne_product_f where kLaneRange.
template <class F, class A>
EMU_HD F fast_ieee_rne_product_short_sub_f(const FastIeeeRneF& p, A a, F b) {
  const F q = a * (b * p.scale);
  const F c = lane_max_abs_signed(q, splat<F>(bits_float(p.emin_bits) * p.scale));
  return lane_fma(a, b, c) - c;
}

// The operands rounded away from zero to h significant bits (x finite; a
// binary32 subnormal keeps h of its own significant bits, so that in either
// case |x| <= |r| <= |x| (1 + 2^(1 - h)) and r is a multiple of 2^(E(x) + 1 -
// h)): the coarse operands of fast_ieee_rne_product_coarse_f. r may be Inf
// where |x| is within 2^(128 - h) of the largest finite value. Subnormals go
// through 2^64 x, where they are normal; both scalings are exact.
EMU_HD float round_away_bits(float x, int h) {
  const bool sub = (float_bits(x) & 0x7fffffffu) < 0x00800000u;
  const uint32_t u = float_bits(sub ? x * 0x1p64f : x), low = (1u << (24 - h)) - 1u;
  const float r = bits_float((u & low) != 0 ? (u | low) + 1u : u);  // the carry may raise the exponent
  return sub ? r * 0x1p-64f : r;
}
// The coarse operands' precisions: a to kCoarseBitsA bits, b to kCoarseBitsB.
constexpr int kCoarseBitsA = 11, kCoarseBitsB = 12;

// fast_ieee_rne_product_normal_f in one operation fewer for any binary32
// operands, given two more operands prepared once per element of A and of B
// (backends/cpu/gemm.cpp packs them): ac = round_away_bits(a, hA) and bc =
// round_away_bits(b, hB) 2^s, s = 23 - m, m = man_bits, hA = kCoarseBitsA, hB =
// kCoarseBitsB. Conditions: those of the normal form, |a| < 2^127 (so that ac is
// finite), and fast_ieee_rne_product_coarse_ok (m <= 7: e6m6, bf16, fp8, ...).
// C = ac bc (one multiply) is then the magic constant, with x = a b exact, E =
// E(x), B = E + s (the binary32 binade whose spacing 2^(B - 23) = 2^(E - m) is
// the grid of x's binade in mul):
//   - C is exact and a multiple of 2^(B - 22), an even multiple of the grid:
//     ac and bc are multiples of 2^(E(a) + 1 - hA) and 2^(E(b) + 1 - hB + s),
//     E(a) + E(b) >= E - 1, and hA + hB = 23; with |C| < 2^(B + 2), at most 24
//     bits;
//   - C has x's sign and 2^B <= |x| 2^s <= |C| <= |x| 2^s (1 + d), d = (1 +
//     2^(1 - hA))(1 + 2^(1 - hB)) - 1;
//   - where |x| + |C| < 2^(B + 1), RN(x + C) (one FMA) rounds x + C to the grid
//     of binade B, 2^(B + 1) included, ties to even: C + RNE_m(x), and the
//     subtraction of C is exact;
//   - else |x| (1 + 2^s (1 + d)) >= 2^(B + 1), so D = 2^(E + 1) - |x| <
//     2^(E + 1) (d + 2^-s) <= 2^(E - m - 1) = 2^(B - 24) by
//     fast_ieee_rne_product_coarse_ok: R_m(x) = sign(x) 2^(E + 1). x + C lies
//     within D of C' = C + sign(x) 2^(E + 1) (a multiple of 2^(B - 22), since
//     s <= 23, and at least 2^(B + 1)), and a quarter of the grid 2^(B - 22)
//     there, so RN(x + C) = C' and the subtraction leaves sign(x) 2^(E + 1).
// A zero product gives +0, as in the normal form. Multiply, FMA, subtract;
// unlike the short form the multiply reads only prepared operands.
template <class F, class A>
EMU_HD F fast_ieee_rne_product_coarse_f(A a, F b, A ac, F bc) {
  const F c = ac * bc;
  return lane_fma(a, b, c) - c;
}
// d + 2^-s <= 2^(-m-2) (2^-s = 1 / scale, 2^(-m-2) = scale 2^-25; all exact).
EMU_HD bool fast_ieee_rne_product_coarse_ok(const FastIeeeRneF& p) {
  constexpr double kExcess = 0x1p-10 + 0x1p-11 + 0x1p-21;  // d for hA = 11, hB = 12
  static_assert(kCoarseBitsA == 11 && kCoarseBitsB == 12, "kExcess is d of these precisions");
  return kExcess + 1.0 / static_cast<double>(p.scale) <= static_cast<double>(p.scale) * 0x1p-25;
}

// ---------------------------------------------------------------------------
// IEEE-like formats, every mode but stochastic, binary64 input, integer
// rounding on the bit pattern. Covers every input (no flag): Inf, NaN,
// overflow, :sat, fn and finite-only formats, :nosub.
//
// Domain: exp_bits <= 10, man_bits <= 51, rounding not Stochastic, x any
// binary64 (the result is a binary64; a binary32 value when exp_bits <= 8 and
// the format is a storage format).
struct FastIeeeD {
  uint64_t drop;              // 52 - man_bits: bits dropped in the normal range
  uint64_t emin_biased;       // binary64 biased exponent of the smallest normal
  uint64_t max_bits;          // bits of the largest finite value
  uint64_t flush_below;       // :nosub: magnitudes below these bits (2^emin) become 0
  uint64_t step_bits;         // bits of the smallest subnormal step 2^(emin - man_bits)
  uint64_t ovf_pos, ovf_neg;  // result of a finite overflow, by sign
  uint64_t inf_pos, inf_neg;  // result of an Inf input, by sign
  Rounding mode;
};

constexpr uint64_t kFastQuietNan64 = uint64_t{0x7ff8000000000000};  // quiet_nan()

EMU_HD bool fast_ieee_d_supported(const Format& f) {
  return f.family == Family::Ieee && f.rounding != Rounding::Stochastic && f.exp_bits <= 10 &&
         f.man_bits <= 51;
}

EMU_HD FastIeeeD fast_ieee_d_params(const Format& f) {
  FastIeeeD p;
  p.drop = static_cast<uint64_t>(52 - f.man_bits);
  p.emin_biased = static_cast<uint64_t>(f.emin + 1023);
  p.max_bits = double_bits(f.max_finite);
  p.flush_below = f.subnormals ? 0 : static_cast<uint64_t>(f.emin + 1023) << 52;
  p.step_bits = static_cast<uint64_t>(f.emin - f.man_bits + 1023) << 52;
  p.mode = f.rounding;
  // As ieee_overflow(): saturating and finite-only formats, and the modes that
  // round toward zero for the sign, give the largest finite value; fn formats NaN.
  const bool sat = f.saturate || f.specials == Specials::FiniteOnly;
  const bool nan_only = f.specials == Specials::NanOnly;
  const bool tz_pos = f.rounding == Rounding::TowardZero || f.rounding == Rounding::Down;
  const bool tz_neg = f.rounding == Rounding::TowardZero || f.rounding == Rounding::Up;
  const uint64_t inf = uint64_t{0x7ff0000000000000}, sign = uint64_t{0x8000000000000000};
  p.inf_pos = sat ? p.max_bits : nan_only ? kFastQuietNan64 : inf;
  p.inf_neg = sat ? p.max_bits | sign : nan_only ? kFastQuietNan64 : inf | sign;
  p.ovf_pos = tz_pos ? p.max_bits : p.inf_pos;
  p.ovf_neg = tz_neg ? p.max_bits | sign : p.inf_neg;
  return p;
}

// visit(std::integral_constant<Rounding, M>{}) for the mode M = mode, so that a
// caller picks its fast_ieee_d<M> instance once; false (and no call) for
// stochastic rounding, which has no fast kernel.
template <class Visit>
bool visit_fast_mode(Rounding mode, Visit&& visit) {
  switch (mode) {
    case Rounding::NearestEven:
      visit(std::integral_constant<Rounding, Rounding::NearestEven>{});
      return true;
    case Rounding::TowardZero:
      visit(std::integral_constant<Rounding, Rounding::TowardZero>{});
      return true;
    case Rounding::Up:
      visit(std::integral_constant<Rounding, Rounding::Up>{});
      return true;
    case Rounding::Down:
      visit(std::integral_constant<Rounding, Rounding::Down>{});
      return true;
    case Rounding::NearestAway:
      visit(std::integral_constant<Rounding, Rounding::NearestAway>{});
      return true;
    case Rounding::Stochastic:
      break;
  }
  return false;
}

template <Rounding Mode, class D, class U = typename LaneTraits<D>::U>
EMU_HD D fast_ieee_d(const FastIeeeD& p, D x) {
  static_assert(Mode != Rounding::Stochastic, "stochastic rounding has no fast kernel");
  const U u = lane_cast<U>(x);
  const U s = u & uint64_t{0x8000000000000000};
  const U a = u & uint64_t{0x7fffffffffffffff};
  const U e = a >> 52;
  const U man = a & uint64_t{0x000fffffffffffff};
  const U sig = man | ((e != uint64_t{0}) ? splat<U>(uint64_t{1} << 52) : splat<U>(uint64_t{0}));
  const U e_eff = lane_umax(e, splat<U>(uint64_t{1}));
  // Dropped bits: drop in the normal range, one more per binade below it. From
  // 54 on nothing of sig is kept and the decisions no longer change.
  const U below = (splat<U>(p.emin_biased) > e_eff) ? splat<U>(p.emin_biased) - e_eff : splat<U>(uint64_t{0});
  const U dc = lane_umin(below + p.drop, splat<U>(uint64_t{54}));
  const U one = splat<U>(uint64_t{1});
  const U rem = sig & ((one << dc) - uint64_t{1});
  const U half = (one << dc) >> 1;
  const U zero = splat<U>(uint64_t{0});
  U inc;
  if constexpr (Mode == Rounding::NearestEven) {
    const U kept_odd = (sig >> dc) & uint64_t{1};
    const U round = ((rem & half) != uint64_t{0}) ? one : zero;
    const U sticky = ((rem & (half - uint64_t{1})) != uint64_t{0}) ? one : zero;
    inc = round & (sticky | kept_odd);
  } else if constexpr (Mode == Rounding::NearestAway) {
    inc = ((rem & half) != uint64_t{0}) ? one : zero;
  } else if constexpr (Mode == Rounding::TowardZero) {
    inc = zero;
  } else if constexpr (Mode == Rounding::Up) {
    inc = ((rem != uint64_t{0}) & (s == uint64_t{0})) ? one : zero;
  } else {
    inc = ((rem != uint64_t{0}) & (s != uint64_t{0})) ? one : zero;
  }
  // On x's own grid while part of sig is kept (the carry bumps the exponent),
  // otherwise 0 or one smallest step.
  const U linear = ((a >> dc) + inc) << dc;
  const U mag = (dc <= uint64_t{52}) ? linear : ((inc != uint64_t{0}) ? splat<U>(p.step_bits) : zero);
  const U r = ((mag < p.flush_below) ? zero : mag) | s;
  const U ovf = (s != uint64_t{0}) ? splat<U>(p.ovf_neg) : splat<U>(p.ovf_pos);
  const U inf = (s != uint64_t{0}) ? splat<U>(p.inf_neg) : splat<U>(p.inf_pos);
  const U special = (man != uint64_t{0}) ? splat<U>(kFastQuietNan64) : inf;
  const U out = (e == uint64_t{0x7ff}) ? special : ((mag > p.max_bits) ? ovf : r);
  return lane_cast<D>(out);
}

// ---------------------------------------------------------------------------
// IEEE-like storage formats, round to nearest even, binary32 input (the sum of
// an accumulator step computed in binary32, see gemm_kernels.h), binary32
// lanes.
//
// Domain (kFull = true): NearestEven, exp_bits <= 8, man_bits <= 22, values
// binary32 values, subnormals on or off, any specials and :sat; every binary32
// input, giving quantize(f, x).
// Lean (kFull = false): only formats with Inf and NaN, no :sat, subnormals on
// (fast_ieee_rne_f32_lean_ok), and inputs that are not NaN or are the default
// quiet NaNs +-0x7fc00000 (what arithmetic on such NaNs produces); a NaN input
// gives a NaN, possibly not quiet_nan()'s bits.
struct FastIeeeRneF32 {
  uint32_t emin_bits;         // exponent field of 2^emin
  uint32_t cap_bits;          // exponent field cap that keeps the magic constant finite
  uint32_t shift;             // (23 - man_bits) in the exponent field
  uint32_t drop;              // 23 - man_bits
  uint32_t max_bits;          // bits of the largest finite value
  uint32_t flush_below;       // :nosub: magnitudes below these bits become 0
  uint32_t ovf_pos, ovf_neg;  // results of overflow / Inf input by sign (RNE: equal)
  float max_value;            // the largest finite value
};

constexpr uint32_t kFastQuietNan32 = 0x7fc00000u;

EMU_HD bool fast_ieee_rne_f32_supported(const Format& f) {
  // e8m0 is left out: its significand is the implicit bit alone, so a tie
  // rounds up (odd significand), which the bit-pattern rounding below would
  // decide from the exponent's last bit instead.
  return f.family == Family::Ieee && f.rounding == Rounding::NearestEven && f.exp_bits <= 8 &&
         f.man_bits <= 22 && !(f.exp_bits == 8 && f.man_bits == 0) && !f.accumulator_only &&
         f.max_finite <= 3.4028234663852886e38;
}
EMU_HD bool fast_ieee_rne_f32_lean_ok(const Format& f) {
  // man_bits >= 1: with 23 dropped bits the rounding increment of exp_bits = 8
  // would carry a NaN's payload into the sign.
  return fast_ieee_rne_f32_supported(f) && f.specials == Specials::InfNan && !f.saturate && f.subnormals &&
         f.man_bits >= 1;
}

EMU_HD FastIeeeRneF32 fast_ieee_rne_f32_params(const Format& f) {
  FastIeeeRneF32 p;
  p.emin_bits = static_cast<uint32_t>(f.emin + 127) << 23;
  p.shift = static_cast<uint32_t>(23 - f.man_bits) << 23;
  p.drop = static_cast<uint32_t>(23 - f.man_bits);
  p.cap_bits = (254u - p.drop) << 23;
  p.max_value = static_cast<float>(f.max_finite);
  p.max_bits = float_bits(p.max_value);
  p.flush_below = f.subnormals ? 0u : static_cast<uint32_t>(f.emin + 127) << 23;
  const bool sat = f.saturate || f.specials == Specials::FiniteOnly;
  const bool nan_only = f.specials == Specials::NanOnly;
  p.ovf_pos = sat ? p.max_bits : nan_only ? kFastQuietNan32 : 0x7f800000u;
  p.ovf_neg = sat ? p.max_bits | 0x80000000u : nan_only ? kFastQuietNan32 : 0xff800000u;
  return p;
}

// kWide: 1 if the format has exp_bits == 8, 0 if not, -1 to read it from p at
// run time (kernels fix it at compile time).
template <bool kFull = true, int kWide = -1, class F, class U = typename LaneTraits<F>::U>
EMU_HD F fast_ieee_rne_f32(const FastIeeeRneF32& p, F x) {
  const U u = lane_cast<U>(x);
  const bool wide = kWide == 1 || (kWide == -1 && p.emin_bits == (1u << 23));
  if constexpr (!kFull) {
    if (wide) {
      // The rounding below on the signed pattern: no carry reaches the sign,
      // since the magnitude's pattern is at most Inf's or the default NaN's
      // (0x7fc00000), far below 2^31 - 2^drop (the lean domain).
      const U lsb = (u >> p.drop) & 1u;
      return lane_cast<F>((u + (((1u << p.drop) >> 1) - 1u) + lsb) & ~((1u << p.drop) - 1u));
    }
  }
  const U sign = u & 0x80000000u;
  const U a = u & 0x7fffffffu;
  U mag;
  if (wide) {
    // exp_bits == 8: the target's grid is every 2^drop-th binary32 bit pattern
    // over the whole range, subnormals included; RNE on the pattern. A carry
    // out of the largest finite value gives Inf's pattern.
    const U lsb = (a >> p.drop) & 1u;
    mag = (a + ((1u << p.drop) >> 1) - 1u + lsb) & ~((1u << p.drop) - 1u);
  } else {
    // Magic constant; the exponent is capped so that C stays finite for Inf
    // and NaN inputs (Inf - C stays Inf, NaN stays NaN).
    const U e = a & 0x7f800000u;
    const U c = lane_umin(lane_umax(e, splat<U>(p.emin_bits)), splat<U>(p.cap_bits)) + p.shift;
    const F cs = lane_cast<F>(c);
    const F ax = lane_cast<F>(a);
    const F r = (ax + cs) - cs;
    if constexpr (!kFull) {
      // Overflow (RNE, Inf/NaN formats): Inf; a NaN compares false and stays.
      return lane_cast<F>(((r > p.max_value) ? splat<U>(0x7f800000u) : lane_cast<U>(r)) | sign);
    }
    mag = lane_cast<U>(r);
  }
  mag = (mag < p.flush_below) ? splat<U>(0u) : mag;
  const U ovf = (sign != 0u) ? splat<U>(p.ovf_neg) : splat<U>(p.ovf_pos);
  const U r = (a > 0x7f800000u) ? splat<U>(kFastQuietNan32) : ((mag > p.max_bits) ? ovf : (mag | sign));
  return lane_cast<F>(r);
}

// ---------------------------------------------------------------------------
// Posits posit<n>_<es>, round to nearest even, binary64 lanes, in the binades
// where the posit grid is uniform: 2^s with at least one fraction bit,
// s in [smin, smax]. There the posit rounding of docs/contract.md section 2.9 (cut the bit
// string after n-1 bits, ties to the even code) is rounding to F(s) fraction
// bits with ties to an even fraction:
//   F(s) = n - 3 - es - (t >> es),  t = s >= 0 ? s : -s - 1.
// flag = x nonzero and outside those binades (also Inf/NaN). Zero gives +0.
//
// Domain: posits with rounding NearestEven, 1 <= n - 3 - es <= 50.
struct FastPositRneD {
  uint64_t lo;    // biased binary64 exponent of 2^smin
  uint64_t hi;    // biased binary64 exponent of 2^smax
  uint64_t base;  // n - 3 - es
  uint64_t es;
};

EMU_HD bool fast_posit_rne_d_supported(const Format& f) {
  return f.family == Family::Posit && f.rounding == Rounding::NearestEven && f.nbits - 3 - f.es >= 1 &&
         f.nbits - 3 - f.es <= 50 && f.es <= 4;
}

EMU_HD FastPositRneD fast_posit_rne_d_params(const Format& f) {
  FastPositRneD p;
  const int64_t span = static_cast<int64_t>(f.nbits - 3 - f.es) << f.es;  // F >= 1 for t < span
  p.lo = static_cast<uint64_t>(1023 - span);
  p.hi = static_cast<uint64_t>(1023 + span - 1);
  p.base = static_cast<uint64_t>(f.nbits - 3 - f.es);
  p.es = static_cast<uint64_t>(f.es);
  return p;
}

template <class D, class U = typename LaneTraits<D>::U, class I = typename LaneTraits<D>::I,
          class M = typename LaneTraits<D>::Mask>
EMU_HD D fast_posit_rne_d(const FastPositRneD& p, D x, M* flag) {
  // Exponent arithmetic in place (field at bit 52), without clamping: lanes
  // outside [lo, hi] are flagged, and a zero gets a finite C and stays +0.
  const U u = lane_cast<U>(x);
  const U ee = u & uint64_t{0x7ff0000000000000};
  *flag = lane_beyond_nonzero(ee - (p.lo << 52), splat<U>((p.hi - p.lo) << 52), u);
  const I s = lane_cast<I>(ee - (uint64_t{1023} << 52));  // s << 52
  const U t = lane_cast<U>(s ^ (s >> 63));                // (t << 52) + low junk
  const U q = (t >> (52 + p.es)) << 52;                   // (t >> es) << 52
  const D cs =
      lane_cast<D>(ee + (((52 - p.base) << 52) | (uint64_t{1} << 51)) + q);  // C = 1.5 * 2^(s + 52 - F(s))
  return (x + cs) - cs;  // zero gives +0 (posits have one zero)
}

// The same in binary32 lanes, for an input that is exact or rounded to odd at
// 24 bits (lane_sum_rto): with F(s) <= 21 the posit rounding
// of the RTO value equals that of the exact value.
//
// Domain: posits with rounding NearestEven, 1 <= n - 3 - es <= 21 and all
// uniform-grid binades inside the binary32 normal range (fast_posit_rne_f_supported).
struct FastPositRneF {
  uint32_t lo, hi;  // biased binary32 exponents of 2^smin and 2^smax
  uint32_t base;    // n - 3 - es
  uint32_t es;
  // When hi - lo < 64 (posit8_*, posit16_0, posit16_1, ...): the high half of
  // C's bits by the exponent field's low six bits, for lane_lookup_hi16.
  bool has_table;
  uint16_t c_high[64];
};

EMU_HD bool fast_posit_rne_f_supported(const Format& f) {
  const int base = f.nbits - 3 - f.es;
  return f.family == Family::Posit && f.rounding == Rounding::NearestEven && base >= 1 && base <= 21 &&
         f.es <= 4 && (base << f.es) <= 100;
}

EMU_HD FastPositRneF fast_posit_rne_f_params(const Format& f) {
  FastPositRneF p;
  const int span = (f.nbits - 3 - f.es) << f.es;
  p.lo = static_cast<uint32_t>(127 - span);
  p.hi = static_cast<uint32_t>(127 + span - 1);
  p.base = static_cast<uint32_t>(f.nbits - 3 - f.es);
  p.es = static_cast<uint32_t>(f.es);
  p.has_table = p.hi - p.lo < 64;
  for (uint32_t e = 0; e < 64; ++e) p.c_high[e] = 0;
  if (p.has_table) {
    for (uint32_t e = p.lo; e <= p.hi; ++e) {
      const int s = static_cast<int>(e) - 127;
      const int t = s >= 0 ? s : -s - 1;
      const uint32_t cexp =
          e + 23 - p.base + static_cast<uint32_t>(t >> p.es);  // C = 1.5 * 2^(s + 23 - F(s))
      p.c_high[e & 63] = static_cast<uint16_t>(((cexp << 23) | (1u << 22)) >> 16);
    }
  }
  return p;
}

// C's bits for the exponent field ee (in place) of an unflagged lane: by
// arithmetic, or by lookup when `table` is given (the params' c_high for
// scalar lanes, a LaneTable64 made from it for vectors; p.has_table only).
template <class U, class I, class Table>
EMU_HD U posit_magic_bits(const FastPositRneF& p, const Table* table, U ee) {
  if (table) return lane_lookup_hi16(table, ee);
  const I s = lane_cast<I>(ee - (127u << 23));           // s << 23
  const U t = lane_cast<U>(s ^ (s >> 31));               // (t << 23) + low junk
  const U q = (t >> (23 + p.es)) << 23;                  // (t >> es) << 23
  return ee + (((23 - p.base) << 23) | (1u << 22)) + q;  // 1.5 * 2^(s + 23 - F(s))
}

template <class F, class Table = uint16_t, class U = typename LaneTraits<F>::U,
          class I = typename LaneTraits<F>::I, class M = typename LaneTraits<F>::Mask>
EMU_HD F fast_posit_rne_f(const FastPositRneF& p, F x, M* flag, const Table* table = nullptr) {
  // Exponent arithmetic in place (field at bit 23), without clamping: lanes
  // outside [lo, hi] are flagged, and a zero gets a finite C and stays +0.
  const U u = lane_cast<U>(x);
  const U ee = u & 0x7f800000u;
  *flag = lane_beyond_nonzero(ee - (p.lo << 23), splat<U>((p.hi - p.lo) << 23), u);
  const F cs = lane_cast<F>(posit_magic_bits<U, I>(p, table, ee));
  return (x + cs) - cs;  // zero gives +0
}

// A posit rounding of the exact product a * b, with the FMA as in
// fast_ieee_rne_product_f: C from the binade of the binary32 product (same
// argument for a product that rounded up to a power of two). Domain and flags
// as fast_posit_rne_f (flag = a and b nonzero and the binary32 product outside
// the uniform-grid binades, which covers products that underflow to zero).
template <class F, class Table = uint16_t, class U = typename LaneTraits<F>::U,
          class I = typename LaneTraits<F>::I, class M = typename LaneTraits<F>::Mask>
EMU_HD F fast_posit_rne_product_f(const FastPositRneF& p, F a, F b, M* flag, const Table* table = nullptr) {
  const U u = lane_cast<U>(a * b);
  const U ee = u & 0x7f800000u;
  *flag = lane_beyond_nonzero2(ee - (p.lo << 23), splat<U>((p.hi - p.lo) << 23), lane_cast<U>(a),
                               lane_cast<U>(b));
  const F cs = lane_cast<F>(posit_magic_bits<U, I>(p, table, ee));
  return lane_fma(a, b, cs) - cs;  // a zero product gives +0
}

// ---------------------------------------------------------------------------
// fast_posit_rne_f and fast_posit_rne_product_f without flags, for kernels
// that test their results once, at the end of many steps (gemm_kernels.h
// KernPosit's poison form). Where p.has_table, the exponent fields [lo, hi]
// use hi - lo + 1 of the 64 slots e & 63; the other 63 - (hi - lo) slots
// hold 0x7fc0, the high half of a quiet NaN. An exponent field in [lo - P,
// hi + P], P = 63 - (hi - lo), then reaches its own slot or a poisoned one
// (e & 63 for e in [hi + 1, lo + 63] names no field of [lo, hi], and
// neither does e - 64): C is right or NaN, and a NaN C makes the result NaN,
// which stays NaN through every later sum and rounding. So a caller that
// keeps its inputs' exponent fields inside [lo - P, hi + P] (or zero) and
// finds no NaN at the end knew every C. posit16_1: 48 fields [103, 150], P
// = 16, served [87, 166] (2^-40 <= |x| < 2^40).
//
// The lookup leaves out the mask of the low half (lane_lookup_both16): C's
// bits 0-15 are another slot's entry. Every entry has bit 0 clear (bit 16 of
// 1.5 * 2^k; 0x7fc0), so C = 2^k (1.5 + j 2^-23) with j even and below 2^16:
// in C's binade, an even multiple of the binade's spacing, and x + C stays in
// the binade for |x| < 2^(k-2), i.e. F(s) <= 20 (|x| < 2^(s+1), k = s + 23 -
// F(s)). Then RN(x + C) - C rounds x to the grid, ties to even, exactly as
// with 1.5 * 2^k. A zero's slot is 0 (field 128, s = 1, inside [lo, hi] when
// hi >= 128): C is finite and the result +0.
//
// Domain: p.has_table, p.base <= 20, p.hi >= 128 (fast_posit_poison_supported).
struct FastPositPoison {
  uint32_t lo, hi;      // biased binary32 exponents served (own slot or poison)
  uint16_t c_high[64];  // p.c_high, 0x7fc0 in the slots no field of [p.lo, p.hi] uses
};

EMU_HD bool fast_posit_poison_supported(const FastPositRneF& p) {
  return p.has_table && p.base <= 20 && p.hi >= 128;
}

EMU_HD FastPositPoison fast_posit_poison_params(const FastPositRneF& p) {
  FastPositPoison q;
  const uint32_t spare = 63 - (p.hi - p.lo);
  q.lo = p.lo - spare;
  q.hi = p.hi + spare;
  for (uint32_t e = 0; e < 64; ++e) q.c_high[e] = 0x7fc0;
  for (uint32_t e = p.lo; e <= p.hi; ++e) q.c_high[e & 63] = p.c_high[e & 63];
  return q;
}

template <class F, class Table, class U = typename LaneTraits<F>::U>
EMU_HD F fast_posit_rne_poison_f(const Table* table, F x) {
  const F cs = lane_cast<F>(lane_lookup_both16(table, lane_cast<U>(x)));
  return (x + cs) - cs;  // zero gives +0
}

// The exact product a b, C from the binade of the binary32 product as in
// fast_posit_rne_product_f.
template <class F, class Table, class U = typename LaneTraits<F>::U>
EMU_HD F fast_posit_rne_product_poison_f(const Table* table, F a, F b) {
  const F cs = lane_cast<F>(lane_lookup_both16(table, lane_cast<U>(a * b)));
  return lane_fma(a, b, cs) - cs;  // a zero product gives +0
}

}  // namespace emu
