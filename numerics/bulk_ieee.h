// The fast kernel of the bulk path: R_F(x) for a binary32 x into an IEEE-like
// storage format (eXmY with X <= 8, Y <= 23, every specials kind, every rounding
// mode, :nosub, :sat), computed on the binary32 bit pattern with 32-bit integer
// operations only and no branches, so that a host loop over it vectorises and a
// CUDA kernel can call the same function.
//
// It is a second implementation of ieee_round() (numerics/ieee.h) for one input
// type; tests/test_bulk.cpp checks it bit for bit against emu::quantize() on
// all 2^32 inputs for fp16, bf16 and fp8_e4m3, and on edge cases, random bit
// patterns and a stride through every exponent for every format and mode.
//
// How: with a = |x| as bits, binary32 bit patterns are linear in the value
// within a binade, across the carry into the next binade, and over the whole
// binary32 subnormal range. If the target keeps d <= 23 bits fewer than x at
// x's magnitude, R(x) = ((a + bias) >> d) << d, where the bias (below 2^d)
// encodes the rounding mode; a carry out of the fraction bumps the exponent,
// which is exactly the next grid point. Below the target's normal range the
// grid is the fixed step 2^(emin-Y), so d grows as x shrinks; once d >= 24
// even x's leading bit is dropped and R(x) is 0 or one step, decided by a
// comparison. Overflow, :nosub, Inf and NaN are selects against precomputed
// bit patterns. docs/performance.md has the derivation and the measurements.
#pragma once

#include "numerics/format.h"
#include "numerics/hd.h"

namespace emu {

// Loop-invariant constants of the kernel, derived once per format.
struct IeeeBulkParams {
  uint32_t drop;              // 23 - Y: bits dropped in the target's normal range
  uint32_t emin_biased;       // binary32 biased exponent of the target's smallest normal, >= 1
  uint32_t max_bits;          // bits of the largest finite value
  uint32_t flush_below;       // :nosub: results below these bits (the smallest normal) become 0
  uint32_t step_bits;         // bits of the smallest subnormal step 2^(emin-Y)
  uint32_t half_step_bits;    // bits of 2^(emin-Y-1), where that is a binary32 value
  uint32_t ovf_pos, ovf_neg;  // result of a finite overflow, by sign (sign included)
  uint32_t inf_pos, inf_neg;  // result of an Inf input, by sign (sign included)
  Rounding mode;
};

constexpr uint32_t kBulkQuietNan = 0x7fc00000u;  // binary32 of quiet_nan(): every NaN result

// Whether the kernel covers f: IEEE-like with values that are binary32 values.
EMU_HD bool ieee_bulk_supported(const Format& f) {
  return f.family == Family::Ieee && !f.accumulator_only && f.exp_bits >= 1 && f.exp_bits <= 8 &&
         f.man_bits >= 0 && f.man_bits <= 23 && f.max_finite <= 3.4028234663852886e38;
}

// The binary32 bits of 2^e for -149 <= e <= 127.
EMU_HD uint32_t ieee_bulk_pow2_bits(int e) {
  return e >= -126 ? static_cast<uint32_t>(e + 127) << 23 : 1u << (e + 149);
}

// f must satisfy ieee_bulk_supported(f) and be finalized (format_spec.h).
EMU_HD IeeeBulkParams ieee_bulk_params(const Format& f) {
  IeeeBulkParams p;
  p.drop = static_cast<uint32_t>(23 - f.man_bits);
  p.emin_biased = static_cast<uint32_t>(f.emin + 127);
  p.max_bits = float_bits(static_cast<float>(f.max_finite));
  p.flush_below = f.subnormals ? 0u : ieee_bulk_pow2_bits(f.emin);
  p.step_bits = ieee_bulk_pow2_bits(f.emin - f.man_bits);
  // Only read when x can lie below one step, which needs emin - Y >= -125.
  p.half_step_bits = f.emin - f.man_bits - 1 >= -149 ? ieee_bulk_pow2_bits(f.emin - f.man_bits - 1) : 0u;
  p.mode = f.rounding;
  // As ieee_overflow(): saturating formats and modes that round toward zero for
  // the sign give the largest finite value; fn formats NaN (unsigned); else Inf.
  const bool sat = f.saturate || f.specials == Specials::FiniteOnly;
  const bool nan_only = f.specials == Specials::NanOnly;
  const bool tz_pos = f.rounding == Rounding::TowardZero || f.rounding == Rounding::Down;
  const bool tz_neg = f.rounding == Rounding::TowardZero || f.rounding == Rounding::Up;
  const uint32_t inf = 0x7f800000u, sign = 0x80000000u;
  p.inf_pos = sat ? p.max_bits : nan_only ? kBulkQuietNan : inf;
  p.inf_neg = sat ? p.max_bits | sign : nan_only ? kBulkQuietNan : inf | sign;
  p.ovf_pos = tz_pos ? p.max_bits : p.inf_pos;
  p.ovf_neg = tz_neg ? p.max_bits | sign : p.inf_neg;
  return p;
}

// R_F(x) on bits: u = bits of x, rand = its Philox draw (read by Stochastic only).
// Every step is a 32-bit integer operation or a select; shift counts stay < 32.
// Keep each select a separate statement: when gcc's if-converter sees several
// ?: merged into one many-way PHI it gives up and the loop does not vectorise
// (docs/performance.md says how to check).
//
// Each mode becomes a bias added to the dropped bits before they are cut off:
// nearest-even adds half an ulp minus one plus the kept parity, ties-away half
// an ulp, rounding away from zero an ulp minus one, stochastic an ulp minus one
// exactly when the draw says so (the dropped bits are then nonzero).
template <Rounding Mode>
EMU_HD uint32_t ieee_quantize_bits(const IeeeBulkParams& p, uint32_t u, uint32_t rand) {
  const uint32_t a = u & 0x7fffffffu;
  const uint32_t e = a >> 23;
  const uint32_t e_eff = e > 1u ? e : 1u;  // binary32 subnormals share the ulp of e = 1
  // Dropped bits: 23 - Y in the normal range, one more per binade below it.
  const uint32_t top = e > p.emin_biased ? e : p.emin_biased;
  const uint32_t d = top - e_eff + p.drop;    // up to 149 for tiny x
  const uint32_t dc = d < 25u ? d : 25u;      // from 24 on nothing of x is kept
  const uint32_t low = ~(0xffffffffu << dc);  // the dropped bits
  const bool negative = (u >> 31) != 0u;

  // bias: added to the dropped bits while part of x is kept (dc <= 23);
  // deep_up: whether a value below one smallest step (dc >= 24) rounds up to it.
  uint32_t bias;
  bool deep_up;
  if constexpr (Mode == Rounding::NearestEven) {
    // The parity of the last kept bit: bit dc of the significand, whose
    // leading one is not in a (it matters at dc = 23); none when dc = 0.
    const uint32_t with_hidden = e != 0u ? a | 0x800000u : a;
    bias = (low >> 1) + ((with_hidden >> dc) & low & 1u);
    deep_up = a > p.half_step_bits;
  } else if constexpr (Mode == Rounding::NearestAway) {
    bias = (low >> 1) + (low & 1u);
    deep_up = a >= p.half_step_bits;
  } else if constexpr (Mode == Rounding::TowardZero) {
    bias = 0u;
    deep_up = false;
  } else if constexpr (Mode == Rounding::Up || Mode == Rounding::Down) {
    const bool away = Mode == Rounding::Up ? !negative : negative;
    bias = away ? low : 0u;
    deep_up = away && a != 0u;
  } else {
    // The 32 bits right below the cut, sig * 2^(32-d) truncated mod 2^32; the
    // value rounds away when they and the draw carry out of 32 bits.
    const uint32_t sig = (a & 0x7fffffu) | (e != 0u ? 0x800000u : 0u);  // |x| = sig * 2^(e_eff-150)
    const uint32_t left = sig << ((32u - (d < 32u ? d : 32u)) & 31u);
    const uint32_t right = sig >> (d - 32u < 31u ? d - 32u : 31u);
    const uint32_t below32 = d == 0u ? 0u : d <= 32u ? left : right;
    const bool up = rand > ~below32;
    bias = up ? low : 0u;
    deep_up = up;
  }
  if constexpr (Mode != Rounding::Stochastic) (void)rand;

  // While part of x is kept the rounded value lies on x's own bit grid (a
  // carry bumps the exponent); from dc = 24 on it is 0 or one smallest step.
  const uint32_t linear = ((a + bias) >> dc) << dc;
  const uint32_t deep = deep_up ? p.step_bits : 0u;
  const uint32_t mag = dc <= 23u ? linear : deep;

  const uint32_t r = (mag < p.flush_below ? 0u : mag) | (u & 0x80000000u);
  const uint32_t ovf = negative ? p.ovf_neg : p.ovf_pos;
  const uint32_t inf = negative ? p.inf_neg : p.inf_pos;
  const uint32_t finite = mag > p.max_bits ? ovf : r;
  const uint32_t special = a > 0x7f800000u ? kBulkQuietNan : inf;
  return e == 255u ? special : finite;
}

// The same with the rounding mode read at run time (device code, single values).
EMU_HD uint32_t ieee_quantize_bits(const IeeeBulkParams& p, uint32_t u, uint32_t rand) {
  switch (p.mode) {
    case Rounding::NearestEven:
      return ieee_quantize_bits<Rounding::NearestEven>(p, u, rand);
    case Rounding::TowardZero:
      return ieee_quantize_bits<Rounding::TowardZero>(p, u, rand);
    case Rounding::Up:
      return ieee_quantize_bits<Rounding::Up>(p, u, rand);
    case Rounding::Down:
      return ieee_quantize_bits<Rounding::Down>(p, u, rand);
    case Rounding::NearestAway:
      return ieee_quantize_bits<Rounding::NearestAway>(p, u, rand);
    case Rounding::Stochastic:
      return ieee_quantize_bits<Rounding::Stochastic>(p, u, rand);
  }
  return kBulkQuietNan;
}

}  // namespace emu
