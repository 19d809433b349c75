// An independent reference ("oracle") for numerics/: the same semantics
// (docs/contract.md), computed a different way.
//
// It shares no code with numerics/. It reads emu::Format only as a plain
// description of a format (family, exp_bits, man_bits, specials, subnormals,
// saturate, nbits, es, frac_bits, rounding) and derives everything else (bias,
// range, value sets) from the format definitions itself. Values are exact GMP
// rationals throughout; square roots come from MPFR at 320 bits with its
// inexact flag. Neighbours of a value on a format's grid are found from the
// value (floor on the grid for IEEE-like and fixed point, a search over the
// monotonic posit codes for posits), never from bit manipulation of the input.
//
// Slow by design (microseconds per call): for tests only.
#pragma once

#include <cstdint>

#include "numerics/format.h"
#include "tests/reference/rational.h"

namespace emu::ref {

// An exact extended real: the input of ref_round.
struct RefExact {
  enum class Kind { Zero, Finite, Inf, NaN };
  Kind kind = Kind::Zero;
  bool negative = false;
  // Finite: |value| > 0; with `tail`, the rational just below |value| (below).
  Rational magnitude;
  // The true magnitude is strictly above `magnitude`, by less than any bit
  // that matters for rounding (an irrational square root cut after 320 bits).
  bool tail = false;

  static RefExact zero(bool negative);
  static RefExact inf(bool negative);
  static RefExact nan();
  // A signed rational; zero becomes +0 unless `zero_negative`.
  static RefExact of(const Rational& value, bool zero_negative = false);
  // A binary64 value, exactly (NaN, Inf and signed zeros included).
  static RefExact of(double v);
};

// The value of `code` (its low nbits bits). NaN, NaR: a quiet NaN.
double ref_decode(const Format& f, uint64_t code);

// The code of v; false when v is not a value of f or has no code (a NaN in a
// format without NaN codes, Inf without Inf codes, a subnormal under :nosub).
bool ref_encode(const Format& f, double v, uint64_t* code);

// R_f(value): the core, for a nonzero finite signed rational `value`; `tail`
// as in RefExact (the true value lies strictly further from zero).
double ref_round(const Format& f, const Rational& value, bool tail, uint32_t rand);
// R_f(x) for any exact extended real, special values included.
double ref_round(const Format& f, const RefExact& x, uint32_t rand);

// The SR quantity of docs/contract.md section 2.4 for a nonzero finite `value` strictly
// between two neighbours of f: floor(2^32 * (distance from the lower-magnitude
// neighbour) / unit), where for posits the unit is one step of the encoding
// (the bits of the (n+32)-bit posit below the cut). Exposed for the tests.
uint32_t ref_below32(const Format& f, const Rational& value, bool tail);

// R_f(x) of a binary64 (or binary32) value.
double ref_quantize(const Format& f, double x, uint32_t rand = 0);

// R_f of the exact result; operands are values of f.
double ref_add(const Format& f, double a, double b, uint32_t rand = 0);
double ref_sub(const Format& f, double a, double b, uint32_t rand = 0);
double ref_mul(const Format& f, double a, double b, uint32_t rand = 0);
double ref_div(const Format& f, double a, double b, uint32_t rand = 0);
double ref_sqrt(const Format& f, double a, uint32_t rand = 0);

// The exact results of the operations (signed zeros by IEEE 754 section 6.3:
// an exact zero sum is +0, or -0 when `round_down`).
RefExact exact_sum(const RefExact& a, const RefExact& b, bool round_down);
RefExact exact_product(const RefExact& a, const RefExact& b);
RefExact exact_quotient(const RefExact& a, const RefExact& b);
RefExact exact_square_root(const RefExact& a);

// docs/contract.md section 4, literally: sequential in k, zero operands skipped,
// runs of `chunk` terms (0: none) promoted into `acc_outer`, bias added in the
// last accumulator (acc_outer when chunked, as docs/contract.md section 4.5 says), then
// rounded to `out`. No stochastic rounding (rand = 0 everywhere).
//   a, b: K operands each; bias: one value or null -> y
double ref_dot(bool mul_exact, const Format& mul, const Format& acc, const Format& out, int chunk,
               const Format& acc_outer, const float* a, const float* b, int64_t K, const float* bias);

}  // namespace emu::ref
