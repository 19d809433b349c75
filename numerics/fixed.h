// Fixed point fixed<w>_<f> and int<w>: a w-bit two's complement integer I with
// value I * 2^-f. Saturating by default, :wrap for two's complement wrap-around.
//
// There is no NaN, Inf or -0 in fixed point: NaN reads as 0 and +-Inf saturates
// (even under :wrap), as the PTX cvt.sat instructions do.
#pragma once

#include "numerics/round_bits.h"

namespace emu {

EMU_HD int64_t fixed_max_int(const Format& f) { return (static_cast<int64_t>(1) << (f.nbits - 1)) - 1; }
EMU_HD int64_t fixed_min_int(const Format& f) { return -(static_cast<int64_t>(1) << (f.nbits - 1)); }

EMU_HD double fixed_value(const Format& f, int64_t i) {
  if (i == 0) return 0.0;
  uint64_t magnitude = i < 0 ? ~static_cast<uint64_t>(i) + 1 : static_cast<uint64_t>(i);
  return with_sign(pow2_scale(magnitude, -f.frac_bits), i < 0);
}

// The integer I of R(x).
EMU_HD int64_t fixed_round_int(const Format& f, Exact x, uint32_t rand) {
  switch (x.kind) {
    case Exact::NaN:
      return 0;
    case Exact::Zero:
      return 0;
    case Exact::Inf:
      return x.negative ? fixed_min_int(f) : fixed_max_int(f);
    case Exact::Finite:
      break;
  }
  x = normalized(x);
  // |x| * 2^f >= 2^64 cannot fit; the kept bits are still right mod 2^128 for :wrap.
  bool huge = x.exp + 127 + f.frac_bits >= 64;
  CutValue c = cut_bits(x.sig, x.exp, x.sticky, -f.frac_bits);
  u128 magnitude = c.kept;
  if (round_up_magnitude(f.rounding, x.negative, c, rand)) magnitude += 1;
  if (f.saturate) {
    u128 limit = x.negative ? static_cast<u128>(fixed_max_int(f)) + 1 : static_cast<u128>(fixed_max_int(f));
    if (huge || magnitude > limit) return x.negative ? fixed_min_int(f) : fixed_max_int(f);
    return x.negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  }
  uint64_t low = static_cast<uint64_t>(magnitude);
  if (x.negative) low = ~low + 1;
  // Keep w bits and sign-extend.
  int drop = 64 - f.nbits;
  return static_cast<int64_t>(low << drop) >> drop;
}

EMU_HD double fixed_round(const Format& f, const Exact& x, uint32_t rand) {
  return fixed_value(f, fixed_round_int(f, x, rand));
}

// For :wrap, where only the rounded value modulo 2^w matters: a value congruent
// to x modulo 2^(w-f+1) (an even number of 2^w wraps), of the same sign, below
// 2^(w-f+2) in magnitude. It rounds and wraps like x in every mode (the cut-off
// bits and the sign are unchanged), and keeps a sum with a small addend exact
// where x itself would need more than 128 bits (2^125 + 1.5, say).
EMU_HD Exact fixed_wrap_reduce(const Format& f, Exact x) {
  if (f.family != Family::Fixed || f.saturate || x.kind != Exact::Finite) return x;
  const int top = f.nbits - f.frac_bits + 1;  // the modulus is 2^top
  if (exact_log2(x) <= top) return x;
  // Not normalised: sig keeps its width (53 bits for a binary64), so the result
  // stays as narrow, as exact_add expects.
  int pos = top - x.exp;  // bit of sig with weight 2^top, below sig's top bit
  if (pos <= 0) {         // every bit of x is a multiple of 2^top
    x.sig = 1;
    x.exp = top;
    return x;
  }
  x.sig = (x.sig & ((static_cast<u128>(1) << pos) - 1)) | (static_cast<u128>(1) << pos);
  return x;
}

EMU_HD double fixed_decode(const Format& f, uint64_t code) {
  int drop = 64 - f.nbits;
  return fixed_value(f, static_cast<int64_t>(code << drop) >> drop);
}

EMU_HD bool fixed_encode(const Format& f, double v, uint64_t* code) {
  int64_t i = fixed_round_int(f, exact_from_double(v), 0);
  *code = static_cast<uint64_t>(i) & low_bits_mask(f.nbits);
  return !is_nan(v) && !is_inf(v) && fixed_value(f, i) == v;
}

}  // namespace emu
