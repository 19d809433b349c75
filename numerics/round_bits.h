// The one place where a rounding direction is decided.
//
// Every family rounds the same way: cut an exact value at the position of the
// target's last kept bit, look at what was cut off, and maybe add one unit.
// The families differ only in where the cut is (a float's ulp, a posit's n-th
// encoding bit, a fixed-point 2^-f) and in what happens at the ends of the range.
#pragma once

#include "numerics/exact.h"
#include "numerics/format.h"

namespace emu {

// An exact value cut at a bit position.
struct CutValue {
  u128 kept = 0;         // the bits above the cut (mod 2^128 if they do not fit)
  bool round = false;    // the first bit below the cut
  bool sticky = false;   // any nonzero bit further below
  uint32_t below32 = 0;  // the 32 bits right below the cut, for stochastic rounding
};

// Cut `bits`, whose last bit has weight 2^bits_exp (plus `sticky` below it),
// at weight 2^cut_exp: kept = floor(bits * 2^(bits_exp - cut_exp)).
EMU_HD CutValue cut_bits(u128 bits, int bits_exp, bool sticky, int cut_exp) {
  CutValue c;
  int shift = cut_exp - bits_exp;  // how many of `bits` fall below the cut
  if (shift <= 0) {
    c.kept = -shift >= 128 ? 0 : bits << -shift;
    c.sticky = sticky;  // nothing known below but the sticky bit: round = 0
    return c;
  }
  if (shift > 128) {
    // Everything is below the cut and more than one bit below it.
    c.sticky = bits != 0 || sticky;
    c.below32 = shift - 32 < 128 ? static_cast<uint32_t>(bits >> (shift - 32)) : 0;
    return c;
  }
  c.kept = shift == 128 ? 0 : bits >> shift;
  c.round = static_cast<bool>((bits >> (shift - 1)) & 1);
  u128 rest = shift - 1 == 0 ? 0 : bits & ((static_cast<u128>(1) << (shift - 1)) - 1);
  c.sticky = rest != 0 || sticky;
  c.below32 =
      shift >= 32 ? static_cast<uint32_t>(bits >> (shift - 32)) : static_cast<uint32_t>(bits << (32 - shift));
  return c;
}

// Whether to add one unit to the magnitude `c.kept` of a value of sign
// `negative`. `rand` is used by stochastic rounding only: the result rounds away
// from zero exactly when below32 + rand carries out of 32 bits, i.e. with
// probability (cut-off part) / unit, truncated to 32 bits (docs/contract.md section 2.4).
EMU_HD bool round_up_magnitude(Rounding mode, bool negative, const CutValue& c, uint32_t rand) {
  bool inexact = c.round || c.sticky;
  switch (mode) {
    case Rounding::NearestEven:
      return c.round && (c.sticky || (c.kept & 1));
    case Rounding::NearestAway:
      return c.round;
    case Rounding::TowardZero:
      return false;
    case Rounding::Up:
      return !negative && inexact;
    case Rounding::Down:
      return negative && inexact;
    case Rounding::Stochastic:
      return (static_cast<uint64_t>(c.below32) + rand) >> 32;
  }
  return false;
}

// Whether the rounding mode, for this sign, never rounds away from zero; used to
// decide between the largest finite value and Inf on overflow.
EMU_HD bool rounds_toward_zero(Rounding mode, bool negative) {
  return mode == Rounding::TowardZero || (mode == Rounding::Up && negative) ||
         (mode == Rounding::Down && !negative);
}

}  // namespace emu
