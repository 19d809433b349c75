// An exact (or sticky-exact) real value, the input of every rounding function.
//
// Arithmetic (exact_arith.h) produces the infinitely precise result of an
// operation in this form; round.h turns it into a format value with one
// rounding. Bits that do not fit into `sig` are folded into `sticky`, which is
// all that correct rounding needs as long as `sig` keeps the rounding position
// plus 32 bits for stochastic rounding (every producer guarantees >= 64).
#pragma once

#include "numerics/hd.h"

namespace emu {

struct Exact {
  enum Kind : uint8_t { Zero, Finite, Inf, NaN };
  Kind kind = Zero;
  bool negative = false;
  int exp = 0;          // Finite: |value| = (sig + s) * 2^exp, s in (0,1) if sticky else 0
  u128 sig = 0;         // Finite: nonzero
  bool sticky = false;  // Finite: nonzero bits exist below sig's last bit
};

EMU_HD Exact exact_zero(bool negative) {
  Exact x;
  x.kind = Exact::Zero;
  x.negative = negative;
  return x;
}
EMU_HD Exact exact_inf(bool negative) {
  Exact x;
  x.kind = Exact::Inf;
  x.negative = negative;
  return x;
}
EMU_HD Exact exact_nan() {
  Exact x;
  x.kind = Exact::NaN;
  return x;
}

// A binary64 value, exactly.
EMU_HD Exact exact_from_double(double v) {
  uint64_t u = double_bits(v);
  bool neg = u >> 63;
  int biased = static_cast<int>((u >> 52) & 0x7ff);
  uint64_t mant = u & ((1ull << 52) - 1);
  if (biased == 0x7ff) return mant ? exact_nan() : exact_inf(neg);
  if (biased == 0 && mant == 0) return exact_zero(neg);
  Exact x;
  x.kind = Exact::Finite;
  x.negative = neg;
  x.sig = biased ? (mant | (1ull << 52)) : mant;
  x.exp = (biased ? biased : 1) - 1075;
  return x;
}

EMU_HD Exact exact_from_float(float v) { return exact_from_double(static_cast<double>(v)); }

// Shift sig left so that its top bit is bit 127 (Finite only).
EMU_HD Exact normalized(Exact x) {
  if (x.kind != Exact::Finite) return x;
  int lz = clz128(x.sig);
  x.sig <<= lz;
  x.exp -= lz;
  return x;
}

// floor(log2(|x|)) of a Finite value.
EMU_HD int exact_log2(const Exact& x) { return x.exp + 127 - clz128(x.sig); }

}  // namespace emu
