// Printing numbers for people (`emutrain calc`): exact decimal expansions of
// format values and of exact results, hex floats, code bits and their fields,
// and rounding errors in ulps. Host only; nothing here computes an emulated
// value, it only shows them.
//
// Conventions (docs/calc.md):
//   - a decimal is exact when it has at most kMaxDigits significant digits;
//     a trailing "..." means the digits shown are a correct prefix (truncated,
//     not rounded) and nonzero digits follow;
//   - a hex float of an exact result ends its fraction with "..." when there
//     are nonzero bits beyond the 128 bits kept (the sticky bit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "numerics/exact.h"
#include "numerics/format.h"

namespace emu::calc {

constexpr int kMaxDigits = 40;

// A dyadic rational: (-1)^negative * mag * 2^exp, mag an arbitrary-size integer
// (32-bit limbs, least significant first). Every format value and every
// rounding error of one is one of these.
struct Dyadic {
  bool negative = false;
  std::vector<uint32_t> mag;  // empty = 0
  int exp = 0;

  static Dyadic from_double(double v);  // v finite
  static Dyadic from_u128(bool negative, unsigned __int128 sig, int exp);
  bool is_zero() const { return mag.empty(); }
};

Dyadic operator-(const Dyadic& a, const Dyadic& b);
Dyadic operator+(const Dyadic& a, const Dyadic& b);
Dyadic scale2(Dyadic a, int k);                 // a * 2^k
int compare(const Dyadic& a, const Dyadic& b);  // -1, 0, 1
double approx_double(const Dyadic& a);          // nearest-ish binary64, for ratios printed with "~"

// The exact decimal of d (kMaxDigits rule above).
std::string decimal(const Dyadic& d);
// A value known to lie in [lo, hi], lo < hi: the decimal digits every value in
// the interval shares, then "..."; where the ends differ within 6 significant
// digits (0.0999... and 0.1000...), "~" and hi rounded at the digit above the
// interval's width (~0.1000000000000000000000).
std::string decimal_between(const Dyadic& lo, const Dyadic& hi);

// A binary64 value exactly in decimal; "inf", "-inf", "nan" for the specials.
std::string decimal(double v);
// An exact result (Exact): exact decimal when there is no sticky bit,
// otherwise the digits every value in (sig, sig + 1) * 2^exp shares, then "...".
std::string decimal(const Exact& x);

std::string hex_float(double v);        // like C99 %a, e.g. 0x1.ap-4, subnormals normalized (0x1p-1074)
std::string hex_float(const Exact& x);  // 0x1.<fraction>p<exp>, "..." before p when sticky
std::string binary32_bits(double v);    // "0x3dd00000" of (float)v

// The code as hex with ceil(nbits / 4) digits, e.g. 0x1d.
std::string code_hex(uint64_t code, int nbits);
// The code's bits in binary, grouped by field: "0 0011 101" (sign exponent
// fraction), posits "0 10 1 0000" (sign regime exponent fraction, of the
// magnitude's two's complement for negatives), fixed point all bits.
std::string code_fields(const Format& f, uint64_t code);
// Words for what a code is: "normal", "subnormal", "zero", "Inf", "NaN", "NaR",
// "I = -3, value I * 2^-8", ...
std::string code_class(const Format& f, uint64_t code);

// The ulp at a finite format value r (docs/calc.md): Ieee: 2^(max(floor(log2|r|), emin) - man_bits),
// min_positive at 0 (the smallest positive value, min normal under :nosub);
// Posit: the distance from |r| to the next posit away from zero (to the one
// below at maxpos; minpos at 0); Fixed: 2^-f.
Dyadic ulp_at(const Format& f, double r);

// (rounded - exact) / ulp_at(rounded) as text: exact where the ulp is a power
// of two, "~" and 6 digits otherwise; "n/a (...)" where the error is undefined
// (NaN, Inf, overflow).
std::string ulp_error(const Format& f, double rounded, const Exact& exact);

}  // namespace emu::calc
