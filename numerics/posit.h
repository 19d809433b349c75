// Posits posit<n>_<es> (Posit Standard 2022, with a free es): rounding,
// decoding and encoding.
//
// Rounding works on the encoding, as the standard defines it: the exact value's
// infinitely long posit bit string (regime, exponent, fraction) is cut after
// n-1 bits and rounded there, so ties are decided by the (n+1)-th bit, not by the
// arithmetic midpoint (they differ where exponent bits are cut off). Nonzero
// values never round to 0 (minpos) or past maxpos; NaN and Inf become NaR.
#pragma once

#include "numerics/round_bits.h"

namespace emu {

EMU_HD uint64_t posit_nar(int nbits) { return 1ull << (nbits - 1); }

EMU_HD int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The code whose value is R(x).
EMU_HD uint64_t posit_round_code(const Format& f, Exact x, uint32_t rand) {
  const int n = f.nbits, es = f.es;
  if (x.kind == Exact::NaN || x.kind == Exact::Inf) return posit_nar(n);
  if (x.kind == Exact::Zero) return 0;
  x = normalized(x);
  const uint64_t maxpos = posit_nar(n) - 1;  // magnitude codes run 1 .. maxpos
  int scale = x.exp + 127;
  int regime = floor_div(scale, 1 << es);
  uint64_t magnitude;
  if (regime >= n - 2) {
    magnitude = maxpos;  // at or beyond maxpos: every mode gives maxpos
  } else if (regime < -(n - 2)) {
    magnitude = 1;  // below minpos: every mode gives minpos
  } else {
    // The bit string after the sign, top-aligned in 128 bits.
    int regime_len = regime >= 0 ? regime + 2 : -regime + 1;  // with the terminating bit
    u128 bits = regime >= 0 ? ((static_cast<u128>(1) << (regime + 1)) - 1) << (127 - regime)
                            : static_cast<u128>(1) << (128 - regime_len);
    int used = regime_len;
    if (es > 0) {
      u128 exponent = static_cast<u128>(scale - regime * (1 << es));
      bits |= exponent << (128 - used - es);
      used += es;
    }
    u128 fraction = x.sig << 1;  // the bits after the leading one, top-aligned
    bits |= fraction >> used;
    bool lost = used > 0 && (fraction << (128 - used)) != 0;
    // Cut after n-1 bits: the kept part has weight 2^0 per unit.
    CutValue c = cut_bits(bits, -(128 - (n - 1)), x.sticky || lost, 0);
    magnitude = static_cast<uint64_t>(c.kept);
    if (round_up_magnitude(f.rounding, x.negative, c, rand)) magnitude += 1;
    if (magnitude == 0) magnitude = 1;
    if (magnitude > maxpos) magnitude = maxpos;
  }
  return x.negative ? (~magnitude + 1) & low_bits_mask(n) : magnitude;
}

EMU_HD double posit_decode(const Format& f, uint64_t code) {
  const int n = f.nbits, es = f.es;
  code &= low_bits_mask(n);
  if (code == 0) return 0.0;
  if (code == posit_nar(n)) return quiet_nan();
  bool negative = (code >> (n - 1)) & 1;
  uint64_t magnitude = negative ? (~code + 1) & low_bits_mask(n) : code;
  uint64_t bits = magnitude << (64 - (n - 1));  // the n-1 bits after the sign, top-aligned
  bool ones = bits >> 63;
  int run = ones ? (~bits == 0 ? 64 : clz64(~bits)) : clz64(bits);
  if (run > n - 1) run = n - 1;
  int regime = ones ? run - 1 : -run;
  int consumed = run + 1;  // regime and its terminating bit
  uint64_t rest = consumed >= 64 ? 0 : bits << consumed;
  int exponent = es > 0 ? static_cast<int>(rest >> (64 - es)) : 0;  // cut-off bits read as 0
  uint64_t fraction = es > 0 ? rest << es : rest;
  int scale = regime * (1 << es) + exponent;
  uint64_t sig = (1ull << 63) | (fraction >> 1);
  return with_sign(pow2_scale(sig, scale - 63), negative);
}

EMU_HD double posit_round(const Format& f, const Exact& x, uint32_t rand) {
  return posit_decode(f, posit_round_code(f, x, rand));
}

// Value -> code; false when v is not a posit of this format (NaN encodes as NaR).
EMU_HD bool posit_encode(const Format& f, double v, uint64_t* code) {
  *code = posit_round_code(f, exact_from_double(v), 0);
  if (is_nan(v)) return true;
  return !is_inf(v) && posit_decode(f, *code) == v;
}

}  // namespace emu
