// IEEE-like formats eXmY (and the OCP fn / finite-only variants): rounding of an
// exact value, decoding and encoding of code bits.
//
// Code layout: sign | exponent (exp_bits, biased) | fraction (man_bits).
#pragma once

#include "numerics/round_bits.h"

namespace emu {

// The value an overflowing result takes: Inf, NaN (fn formats) or the largest
// finite value, as docs/contract.md section 2.5 prescribes for the rounding mode.
EMU_HD double ieee_overflow(const Format& f, bool negative, bool toward_zero) {
  if (f.specials == Specials::FiniteOnly || f.saturate || toward_zero)
    return with_sign(f.max_finite, negative);
  if (f.specials == Specials::NanOnly) return quiet_nan();
  return infinity(negative);
}

// R(x) for an IEEE-like format: one correct rounding of the exact value x.
// Returns the format value as a binary64 (a binary32 value unless the format
// is accumulator-only).
EMU_HD double ieee_round(const Format& f, Exact x, uint32_t rand) {
  switch (x.kind) {
    case Exact::NaN:
      return quiet_nan();
    case Exact::Inf:
      return ieee_overflow(f, x.negative, false);
    case Exact::Zero:
      return with_sign(0.0, x.negative);
    case Exact::Finite:
      break;
  }
  x = normalized(x);
  int binade = x.exp + 127;  // |x| in [2^binade, 2^(binade+1))
  // Weight of the last fraction bit at this magnitude; below the normal range
  // the grid stays that of the smallest binade (subnormals).
  int ulp_exp = (binade > f.emin ? binade : f.emin) - f.man_bits;
  CutValue c = cut_bits(x.sig, x.exp, x.sticky, ulp_exp);
  uint64_t kept = static_cast<uint64_t>(c.kept);  // at most 2^(man_bits+1)
  if (round_up_magnitude(f.rounding, x.negative, c, rand)) kept += 1;
  double magnitude = pow2_scale(kept, ulp_exp);
  if (magnitude > f.max_finite)
    return ieee_overflow(f, x.negative, rounds_toward_zero(f.rounding, x.negative));
  // :nosub flushes subnormal results to zero after rounding.
  if (!f.subnormals && magnitude < f.min_normal) magnitude = 0.0;
  return with_sign(magnitude, x.negative);
}

EMU_HD uint64_t ieee_exp_mask(const Format& f) { return (1ull << f.exp_bits) - 1; }
EMU_HD uint64_t ieee_man_mask(const Format& f) { return (1ull << f.man_bits) - 1; }

// Code bits -> value. Under :nosub a subnormal code reads as a signed zero.
EMU_HD double ieee_decode(const Format& f, uint64_t code) {
  const int m = f.man_bits;
  bool negative = (code >> (f.exp_bits + m)) & 1;
  uint64_t biased = (code >> m) & ieee_exp_mask(f);
  uint64_t man = code & ieee_man_mask(f);
  if (biased == ieee_exp_mask(f)) {
    if (f.specials == Specials::InfNan) return man ? quiet_nan() : infinity(negative);
    if (f.specials == Specials::NanOnly && man == ieee_man_mask(f)) return quiet_nan();
  }
  if (biased == 0) {
    if (!f.subnormals) return with_sign(0.0, negative);
    return with_sign(pow2_scale(man, f.emin - m), negative);
  }
  return with_sign(pow2_scale(man | (1ull << m), static_cast<int>(biased) - f.bias - m), negative);
}

// Value -> code bits. Returns false when v is not a value of the format or has
// no code (NaN in a format without NaN codes). NaN encodes as the positive
// quiet NaN: exponent all ones, top fraction bit set (fn: all ones).
EMU_HD bool ieee_encode(const Format& f, double v, uint64_t* code) {
  const int m = f.man_bits;
  const uint64_t top = ieee_exp_mask(f);
  uint64_t sign = static_cast<uint64_t>(sign_bit(v)) << (f.exp_bits + m);
  if (is_nan(v)) {
    if (f.specials == Specials::InfNan && m > 0) {
      *code = (top << m) | (1ull << (m - 1));
      return true;
    }
    if (f.specials == Specials::NanOnly) {
      *code = (top << m) | ieee_man_mask(f);
      return true;
    }
    return false;
  }
  if (is_inf(v)) {
    if (f.specials != Specials::InfNan) return false;
    *code = sign | (top << m);
    return true;
  }
  if (v == 0) {
    *code = sign;
    return true;
  }
  Exact x = normalized(exact_from_double(v));
  int binade = x.exp + 127;
  int ulp_exp = (binade > f.emin ? binade : f.emin) - m;
  CutValue c = cut_bits(x.sig, x.exp, false, ulp_exp);
  if (c.round || c.sticky) return false;  // not on the format's grid
  uint64_t sig = static_cast<uint64_t>(c.kept);
  uint64_t biased = binade >= f.emin ? static_cast<uint64_t>(binade + f.bias) : 0;
  if (biased == 0 && !f.subnormals) return false;
  *code = sign | (biased << m) | (sig & ieee_man_mask(f));
  return ieee_decode(f, *code) == v;  // rejects values beyond the largest finite one
}

}  // namespace emu
