// An approximate multiplier as a mantissa-product lookup table: the lookup
// itself, host+device (docs/approx_mul.md). Building tables, the registry of
// functional models and plugins: numerics/approx_mul.h.
//
// For an eXmY format F (Y <= 11 fraction bits) the table has 2^Y x 2^Y entries
//   entry[(ma << Y) | mb] = (carry << Y) | frac        (Y + 1 bits, in a uint16_t)
// meaning: the model's product of the significands 1.ma and 1.mb (both in
// [1, 2)), rounded to Y fraction bits in its binade with F's rounding mode, is
// 2^carry * (1 + frac 2^-Y). The sign and the exponent are computed exactly:
//   a * b ~= (-1)^(sa ^ sb) * 2^(ea + eb + carry) * (1 + frac 2^-Y)
// and that exact value is then rounded into F (R_F), which applies F's rules for
// overflow (Inf, NaN for "fn" formats, saturation for :sat and finite-only
// formats) and underflow (subnormals, or zero under :nosub). Operands are first
// rounded into F (identity when they already are values of F); F's subnormal
// operands are normalised exactly (their significands fit the Y-bit index).
// Zeros, Inf and NaN give what IEEE multiplication gives, rounded into F:
// 0 x 4 = +0, -0 x 4 = -0, Inf x 0 = NaN, Inf x -2 = -Inf (NaN in e4m3, max in
// a saturating format), NaN x anything = NaN.
#pragma once

#include <cstdint>

#include "numerics/mac_policy.h"
#include "numerics/round.h"

namespace emu {

// ApproxMulLut (the table as plain data) and has_approx_mul: numerics/mac_policy.h,
// since every MacPolicy holds one.

namespace approx_detail {

// A finite nonzero binary64 v whose significand has at most Y fraction bits:
// v = (-1)^neg 2^e (1 + m 2^-Y).
struct Decomposed {
  bool neg;
  int e;
  uint32_t m;
};

EMU_HD Decomposed decompose(double v, int y) {
  const uint64_t u = double_bits(v);
  Decomposed d;
  d.neg = (u >> 63) != 0;
  d.e = static_cast<int>((u >> 52) & 0x7ff) - 1023;  // values of F are binary64 normals
  d.m = static_cast<uint32_t>((u & ((1ull << 52) - 1)) >> (52 - y));
  return d;
}

// Whether the binary64 v is a finite nonzero value of F in a binade where every
// Y-bit significand is one (then R_F(v) = v and decompose() applies).
EMU_HD bool in_fast_range(const ApproxMulLut& lut, double v) {
  const uint64_t u = double_bits(v);
  const int e = static_cast<int>((u >> 52) & 0x7ff) - 1023;
  const uint64_t low = (1ull << (52 - lut.man_bits)) - 1;
  return e >= lut.fast_emin && e <= lut.fast_emax && (u & low) == 0;
}

}  // namespace approx_detail

// The approximate product of binary32 values a and b in the format f the
// table was built for (see the top of this file); a value of f.
EMU_HD double approx_mul_lut(const ApproxMulLut& lut, const Format& f, float a, float b) {
  using namespace approx_detail;
  const double da = static_cast<double>(a), db = static_cast<double>(b);
  // Operands as values of F (the multiplier's inputs).
  const double ra = in_fast_range(lut, da) ? da : round_value(f, da);
  const double rb = in_fast_range(lut, db) ? db : round_value(f, db);
  // Zeros, Inf, NaN: what IEEE multiplication of the two F values gives, rounded into F.
  if (ra == 0.0 || rb == 0.0 || is_nan(ra) || is_nan(rb) || is_inf(ra) || is_inf(rb))
    return round_value(f, ra * rb);
  const int y = lut.man_bits;
  const Decomposed x = decompose(ra, y), z = decompose(rb, y);
  const uint32_t entry = lut.entries[(x.m << y) | z.m];
  const uint32_t frac = entry & ((1u << y) - 1);
  const int e = x.e + z.e + static_cast<int>(entry >> y);
  const bool neg = x.neg != z.neg;
  if (e >= lut.fast_emin && e <= lut.fast_emax)  // a value of F as it stands
    return bits_double((neg ? 1ull << 63 : 0) | (static_cast<uint64_t>(e + 1023) << 52) |
                       (static_cast<uint64_t>(frac) << (52 - y)));
  Exact v;  // (2^Y + frac) 2^(e - Y), exactly, rounded once into F
  v.kind = Exact::Finite;
  v.negative = neg;
  v.sig = (u128{1} << y) | frac;
  v.exp = e - y;
  return round_exact(f, normalized(v), 0);
}

}  // namespace emu
